"""What is indexed: the memory and code catalogs (manifests over the Whoosh index), chunking, sources, vectors, retrieval."""

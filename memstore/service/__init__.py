"""The operations on a vault: the Store and its transaction, sync, curation, history, transfer, editing, conflict resolution."""

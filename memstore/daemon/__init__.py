"""The resident daemon: it holds the index open, answers the shells over a socket and watches the vault and code sources."""

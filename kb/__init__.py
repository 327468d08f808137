"""Knowledge base of repair patterns (``kb/patterns/*.toml``)."""

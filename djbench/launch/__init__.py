"""Stage 2, launch: start a server (and Caddy) as its own process tree, stop the whole tree."""

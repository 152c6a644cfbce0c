"""Tools for the course's authors: what is derived from the problems' folders, the chapters
and the catalogues, and the one command that rewrites it (``python -m authoring regenerate``;
authoring/registry.py lists every generated file). Not part of a student edition."""

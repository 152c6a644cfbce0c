"""The old name of the teacher's tools: they are the top-level package ``classroom`` now.
``python -m grader.classroom ...`` still runs them, saying the new name, for one release;
remove this folder after it. Nothing else lives here."""

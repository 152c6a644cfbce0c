"""Preview the built site locally:  .venv/bin/python web/serve.py [--dir site] [--port 8000]

A static file server on 127.0.0.1 that sends .wasm as application/wasm and .mjs as
text/javascript (what Pyodide needs; older Pythons' http.server guess otherwise).
Any static host that does the same serves the folder as well."""
from __future__ import annotations

import argparse
import functools
import http.server
import threading
from pathlib import Path

TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
         ".json": "application/json", ".whl": "application/octet-stream", ".ipynb": "application/json"}


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def log_message(self, fmt, *args):  # quiet: the browser test reads its own request log
        if self.server.verbose:
            super().log_message(fmt, *args)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the browser stopped reading (a navigation, an aborted load): not an error here
        super().handle_error(request, client_address)


def start(directory: Path, port: int = 0, verbose: bool = False):
    """Serve ``directory`` on 127.0.0.1 in a thread; returns (server, base URL)."""
    handler = functools.partial(Handler, directory=str(directory))
    server = Server(("127.0.0.1", port), handler)
    server.verbose = verbose
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=str(Path(__file__).resolve().parent.parent / "site"))
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args(argv)
    if not (Path(args.dir) / "index.html").is_file():
        raise SystemExit(f"error: {args.dir} has no index.html; build it first: bash web/build.sh")
    server, url = start(Path(args.dir), args.port, verbose=True)
    print(f"Serving {args.dir} at {url}  (Ctrl-C to stop)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()

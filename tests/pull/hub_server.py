#!/usr/bin/env python3
"""A local stand-in for the Hugging Face hub, for `kipp pull` tests (Python 3 standard library only).

Serves checkpoint source directories in the hub's URL layout:
  GET/HEAD /{repo}/resolve/{rev}/{file}   files; *.safetensors are "LFS" files: the resolve URL answers
                                          302 with X-Linked-Etag (SHA-256) and X-Linked-Size, and the
                                          bytes come from /_lfs/{sha256}, like the hub's CDN
  GET      /api/models/{repo}/tree/{rev}  the tree listing: type, path, size, oid, lfs {oid, size}
and 404 for anything else. Byte ranges (Range: bytes=N- / N-M) get 206 or 416.

Faults, from the command line:
  --drop FILE:N        the first GET of FILE's bytes sends N bytes of the body, then closes the connection
  --corrupt FILE:OFF   FILE's byte at offset OFF is served flipped; every advertised hash stays the original
  --ignore-range FILE  answer Range requests for FILE with 200 and the whole file
  --status TEXT:CODE[:COUNT]  answer CODE for request paths containing TEXT (the first COUNT times; default always)
  --no-listing         the tree listing answers 404
  --bad-listing        the tree listing answers 200 with a body that is not JSON
Prints the port it listens on (127.0.0.1, chosen by the system) as the first line of stdout, and
appends one JSON line per request to --log: {"method", "path", "range"}. --hash-cache FILE keeps
the fixture's hashes between runs.
"""
import argparse
import hashlib
import http.server
import json
import os
import socket
import sys
import threading
import urllib.parse

CHUNK = 1 << 20


class HashCache:
    """SHA-256 and git blob ids of files, kept in a JSON file across server runs (keyed by path,
    size and mtime) so that each test does not hash the same fixture again."""

    def __init__(self, path):
        self.path, self.entries, self.dirty = path, {}, False
        if path and os.path.exists(path):
            try:
                with open(path) as handle:
                    self.entries = json.load(handle)
            except (OSError, ValueError):
                self.entries = {}

    def get(self, path, kind):
        info = os.stat(path)
        key = f"{os.path.abspath(path)}:{info.st_size}:{info.st_mtime_ns}:{kind}"
        if key not in self.entries:
            digest = hashlib.sha256() if kind == "sha256" else hashlib.sha1(b"blob %d\0" % info.st_size)
            self.entries[key] = file_digest(path, digest)
            self.dirty = True
        return self.entries[key]

    def save(self):
        if self.path and self.dirty:
            temporary = f"{self.path}.{os.getpid()}"
            with open(temporary, "w") as handle:
                json.dump(self.entries, handle)
            os.replace(temporary, self.path)


class Repo:
    def __init__(self, name, revision, directory, hashes):
        self.name, self.revision, self.directory = name, revision, directory
        self.files = {}  # file name -> listing entry
        for entry in sorted(os.listdir(directory)):
            path = os.path.join(directory, entry)
            if not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            if entry.endswith(".safetensors"):
                sha256 = hashes.get(path, "sha256")
                pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
                self.files[entry] = {"type": "file", "oid": git_blob_sha1(pointer), "size": size, "path": entry,
                                     "lfs": {"oid": sha256, "size": size, "pointerSize": len(pointer)}}
            else:
                blob = hashes.get(path, "blob")
                self.files[entry] = {"type": "file", "oid": blob, "size": size, "path": entry}

    def listing(self):
        return [{"type": "directory", "oid": "0" * 40, "size": 0, "path": "original"}] + list(self.files.values())


def file_digest(path, digest):
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Hub:
    def __init__(self, args):
        self.repos = {}
        hashes = HashCache(args.hash_cache)
        for name, revision, directory in args.repo:
            self.repos[name] = Repo(name, revision, directory, hashes)
        hashes.save()
        self.lfs = {}  # sha256 -> (repo, file)
        for repo in self.repos.values():
            for file, entry in repo.files.items():
                if "lfs" in entry:
                    self.lfs[entry["lfs"]["oid"]] = (repo, file)
        self.drop = dict(parse_pair(item) for item in args.drop)
        self.corrupt = dict(parse_pair(item) for item in args.corrupt)
        self.ignore_range = set(args.ignore_range)
        self.statuses = []
        for item in args.status:
            parts = item.split(":")
            self.statuses.append({"text": parts[0], "code": int(parts[1]),
                                  "left": int(parts[2]) if len(parts) > 2 else None})
        self.no_listing, self.bad_listing = args.no_listing, args.bad_listing
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def record(self, method, path, range_header):
        if self.log:
            with self.lock:
                self.log.write(json.dumps({"method": method, "path": path, "range": range_header}) + "\n")
                self.log.flush()

    def injected_status(self, path):
        with self.lock:
            for rule in self.statuses:
                if rule["text"] in path and (rule["left"] is None or rule["left"] > 0):
                    if rule["left"] is not None:
                        rule["left"] -= 1
                    return rule["code"]
        return None

    def take_drop(self, file):
        with self.lock:
            return self.drop.pop(file, None)


def parse_pair(item):
    name, _, number = item.rpartition(":")
    return name, int(number)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kipp-test-hub/1"

    def log_message(self, format, *args):  # quiet: the request log is the record
        pass

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head):
        hub = self.server.hub
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        hub.record(self.command, path, self.headers.get("Range"))
        code = hub.injected_status(path)
        if code is not None:
            return self.reply(code, b'{"error":"injected"}', head)
        if path.startswith("/api/models/") and "/tree/" in path:
            repo_name, _, revision = path[len("/api/models/"):].partition("/tree/")
            repo = hub.repos.get(repo_name)
            if hub.no_listing or not repo or revision != repo.revision:
                return self.reply(404, b'{"error":"not found"}', head)
            if hub.bad_listing:
                return self.reply(200, b"<html>this is not a listing</html>", head, "text/html")
            return self.reply(200, json.dumps(repo.listing()).encode(), head, "application/json")
        if path.startswith("/_lfs/"):
            found = hub.lfs.get(path[len("/_lfs/"):])
            if not found:
                return self.reply(404, b"no such object", head)
            repo, file = found
            return self.send_file(repo, file, head, {})
        if "/resolve/" in path:
            repo_name, _, rest = path[1:].partition("/resolve/")
            revision, _, file = rest.partition("/")
            repo = hub.repos.get(repo_name)
            if not repo or revision != repo.revision or file not in repo.files:
                return self.reply(404, b"Entry not found", head, extra={"X-Error-Code": "EntryNotFound"})
            entry = repo.files[file]
            if "lfs" in entry:  # like the hub: the hash in headers, the bytes from the CDN
                sha256 = entry["lfs"]["oid"]
                return self.reply(302, b"", head, extra={
                    "Location": f"/_lfs/{sha256}", "X-Linked-Etag": f'"{sha256}"',
                    "X-Linked-Size": str(entry["size"]), "ETag": f'"{entry["oid"]}"'})
            return self.send_file(repo, file, head, {"ETag": f'"{entry["oid"]}"'})
        return self.reply(404, b"not found", head)

    def reply(self, code, body, head, content_type="text/plain", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def send_file(self, repo, file, head, extra):
        hub = self.server.hub
        path = os.path.join(repo.directory, file)
        size = os.path.getsize(path)
        start, end = 0, size - 1
        status = 200
        range_header = self.headers.get("Range")
        if range_header and file not in hub.ignore_range:
            spec = range_header.strip()
            if not spec.startswith("bytes=") or "," in spec:
                return self.reply(400, b"unsupported range", head)
            first, _, last = spec[len("bytes="):].partition("-")
            start = int(first)
            end = min(int(last), size - 1) if last else size - 1
            if start >= size:
                return self.reply(416, b"", head, extra={"Content-Range": f"bytes */{size}"})
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if head:
            return
        drop_after = hub.take_drop(file)
        corrupt_at = hub.corrupt.get(file)
        sent = 0
        with open(path, "rb") as handle:
            handle.seek(start)
            position = start
            while position <= end:
                chunk = bytearray(handle.read(min(CHUNK, end - position + 1)))
                if not chunk:
                    break
                if corrupt_at is not None and position <= corrupt_at < position + len(chunk):
                    chunk[corrupt_at - position] ^= 0xFF
                if drop_after is not None and sent + len(chunk) >= drop_after:
                    self.wfile.write(chunk[:drop_after - sent])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.wfile.write(chunk)
                sent += len(chunk)
                position += len(chunk)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", nargs=3, action="append", default=[], metavar=("REPO", "REVISION", "DIR"))
    parser.add_argument("--log")
    parser.add_argument("--hash-cache", help="a JSON file that keeps file hashes across runs")
    parser.add_argument("--drop", action="append", default=[])
    parser.add_argument("--corrupt", action="append", default=[])
    parser.add_argument("--ignore-range", action="append", default=[])
    parser.add_argument("--status", action="append", default=[])
    parser.add_argument("--no-listing", action="store_true")
    parser.add_argument("--bad-listing", action="store_true")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.hub = Hub(args)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A local stand-in for the Hugging Face hub that behaves as the real one does, for `kipp pull` tests
(Python 3 standard library only). Two servers: the hub on 127.0.0.1 and its CDN on 127.0.0.2.

The hub (127.0.0.1):
  GET /api/models/{repo}/tree/{rev}      the tree listing (type, path, size, oid, lfs {oid, size,
                                         pointerSize}), paginated with `Link: <absolute URL>; rel="next"`;
                                         a folder of the repository (1_Pooling) is a "directory" entry
  GET /api/models/{repo}/tree/{rev}/{folder}   the listing of that folder, its files' paths in full
  GET|HEAD /{repo}/resolve/{rev}/{file}  a file in git-LFS (the patterns of the repository's own
                                         .gitattributes): 302 to an absolute, signed CDN URL, with
                                         X-Linked-Etag (SHA-256), X-Linked-Size, ETag and X-Repo-Commit;
                                         any other file: 307 with a relative Location into
  GET|HEAD /api/resolve-cache/models/{repo}/{rev}/{file}   which serves the bytes, ETag = git blob id
The CDN (127.0.0.2):
  GET /repos/{sha256}?Expires=T&Signature=S   the bytes, after checking the signature and that T is
                                              not past (403 "Request has expired" otherwise); HEAD is
                                              refused (403), as a signed URL for GET refuses it
Both honour Range (bytes=N- and N-M: 206, or 416 past the end) and 404 anything else.

Faults, from the command line:
  --drop FILE:N        the first GET of FILE's bytes sends N bytes of the body, then closes the connection
  --corrupt FILE:OFF   FILE's byte at offset OFF is served flipped; every advertised hash stays the original
  --ignore-range FILE  answer Range requests for FILE with 200 and the whole file
  --status TEXT:CODE[:COUNT[:RETRY_AFTER]]  answer CODE for request paths containing TEXT (the first
                       COUNT times, default always), with Retry-After when given
  --expire FILE:K      the K-th signed URL the hub issues for FILE (counting from 1) is already expired
  --page-size N        tree listing pages of N entries
  --require-token T    the hub answers 401 to requests without `Authorization: Bearer T` (403 for another token)
  --no-listing         the tree listing answers 404
  --bad-listing        the tree listing answers 200 with a body that is not JSON
  --rate N             file bodies go out at about N bytes per second (in pieces of 64 KiB), slow
                       enough for a test to interrupt a transfer midway
Prints the hub's port as the first line of stdout, and appends one JSON line per request to --log:
{"server", "method", "path", "range", "authorization", "time"}. --hash-cache FILE keeps the fixture's
hashes between runs.
"""
import argparse
import fnmatch
import hashlib
import hmac
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

CHUNK = 1 << 20
RATE_PIECE = 64 << 10
CDN_HOST = "127.0.0.2"
SIGNING_KEY = os.urandom(16)
URL_LIFETIME_S = 3600


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


def lfs_patterns(directory):
    """The LFS patterns of a repository's .gitattributes (as the hub decides what is LFS)."""
    path = os.path.join(directory, ".gitattributes")
    if not os.path.exists(path):
        return ["*.safetensors"]
    with open(path) as handle:
        return [line.split()[0] for line in handle if "filter=lfs" in line]


class Repo:
    def __init__(self, name, revision, directory, hashes):
        self.name, self.revision, self.directory = name, revision, directory
        self.files = {}  # file path in the repository -> listing entry
        self.folders = {}  # folder -> its directory entry
        patterns = lfs_patterns(directory)
        names = []
        for entry in sorted(os.listdir(directory)):
            if os.path.isdir(os.path.join(directory, entry)):
                self.folders[entry] = {"type": "directory", "oid": "0" * 40, "size": 0, "path": entry}
                names += [f"{entry}/{inner}" for inner in sorted(os.listdir(os.path.join(directory, entry)))]
            else:
                names.append(entry)
        for entry in names:
            path = os.path.join(directory, entry)
            if not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            if any(fnmatch.fnmatchcase(entry, pattern) for pattern in patterns):
                sha256 = hashes.get(path, "sha256")
                pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
                self.files[entry] = {"type": "file", "oid": git_blob_sha1(pointer), "size": size, "path": entry,
                                     "lfs": {"oid": sha256, "size": size, "pointerSize": len(pointer)}}
            else:
                self.files[entry] = {"type": "file", "oid": hashes.get(path, "blob"), "size": size, "path": entry}

    def listing(self, folder=""):
        """The hub's listing of the root (its folders as directory entries) or of one folder."""
        if folder:
            return [e for name, e in self.files.items() if name.rpartition("/")[0] == folder]
        root = [e for name, e in self.files.items() if "/" not in name]
        folders = {"original": {"type": "directory", "oid": "0" * 40, "size": 0, "path": "original"}, **self.folders}
        return sorted(folders.values(), key=lambda e: e["path"]) + root


def file_digest(path, digest):
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def signature(sha256, expires):
    return hmac.new(SIGNING_KEY, f"{sha256}:{expires}".encode(), hashlib.sha256).hexdigest()


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
        self.expire = {}
        for item in args.expire:
            name, issue = parse_pair(item)
            self.expire.setdefault(name, set()).add(issue)
        self.issued = {}  # file -> signed URLs issued so far
        self.statuses = []
        for item in args.status:
            parts = item.split(":")
            self.statuses.append({"text": parts[0], "code": int(parts[1]),
                                  "left": int(parts[2]) if len(parts) > 2 and parts[2] else None,
                                  "retry_after": parts[3] if len(parts) > 3 else None})
        self.no_listing, self.bad_listing, self.page_size = args.no_listing, args.bad_listing, args.page_size
        self.rate = args.rate
        self.token = args.require_token
        self.hub_port = self.cdn_port = None
        self.lock = threading.Lock()
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def record(self, server, method, path, headers):
        if self.log:
            with self.lock:
                self.log.write(json.dumps({"server": server, "method": method, "path": path,
                                           "range": headers.get("Range"),
                                           "authorization": headers.get("Authorization"),
                                           "time": time.time()}) + "\n")
                self.log.flush()

    def injected_status(self, path):
        with self.lock:
            for rule in self.statuses:
                if rule["text"] in path and (rule["left"] is None or rule["left"] > 0):
                    if rule["left"] is not None:
                        rule["left"] -= 1
                    return rule["code"], rule["retry_after"]
        return None, None

    def take_drop(self, file):
        with self.lock:
            return self.drop.pop(file, None)

    def signed_url(self, file, sha256):
        with self.lock:
            self.issued[file] = self.issued.get(file, 0) + 1
            expired = self.issued[file] in self.expire.get(file, set())
        expires = int(time.time()) + (-60 if expired else URL_LIFETIME_S)
        return (f"http://{CDN_HOST}:{self.cdn_port}/repos/{sha256}?Expires={expires}"
                f"&Signature={signature(sha256, expires)}")


def parse_pair(item):
    name, _, number = item.rpartition(":")
    return name, int(number)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kipp-test-hub/2"

    def log_message(self, format, *args):  # quiet: the request log is the record
        pass

    def do_HEAD(self):
        self.route(head=True)

    def do_GET(self):
        self.route(head=False)

    def route(self, head):
        hub = self.server.hub
        split = urllib.parse.urlsplit(self.path)
        path, query = urllib.parse.unquote(split.path), urllib.parse.parse_qs(split.query)
        hub.record(self.server.role, self.command, path, self.headers)
        code, retry_after = hub.injected_status(path)
        if code is not None:
            return self.reply(code, b'{"error":"injected"}', head,
                              extra={"Retry-After": retry_after} if retry_after else None)
        if self.server.role == "cdn":
            return self.route_cdn(path, query, head)
        if hub.token is not None:
            sent = self.headers.get("Authorization")
            if sent != f"Bearer {hub.token}":
                return self.reply(403 if sent else 401, b'{"error":"Invalid credentials in Authorization header"}',
                                  head, extra={"X-Error-Code": "GatedRepo" if sent else "RepoNotFound"})
        if path.startswith("/api/models/") and "/tree/" in path:
            return self.route_listing(path, query, head)
        if path.startswith("/api/resolve-cache/models/"):
            return self.route_resolve_cache(path, head)
        if "/resolve/" in path:
            return self.route_resolve(path, head)
        return self.reply(404, b"not found", head)

    def route_listing(self, path, query, head):
        hub = self.server.hub
        repo_name, _, revision = path[len("/api/models/"):].partition("/tree/")
        revision, _, folder = revision.partition("/")
        repo = hub.repos.get(repo_name)
        if hub.no_listing or not repo or revision != repo.revision or (folder and folder not in repo.folders):
            return self.reply(404, b'{"error":"not found"}', head)
        if hub.bad_listing:
            return self.reply(200, b"<html>this is not a listing</html>", head, "text/html")
        entries = repo.listing(folder)
        start = int(query.get("cursor", ["0"])[0])
        extra = {}
        if hub.page_size:
            page, following = entries[start:start + hub.page_size], start + hub.page_size
            if following < len(entries):
                extra["Link"] = (f'<http://127.0.0.1:{hub.hub_port}/api/models/{repo_name}/tree/{revision}{"/" + folder if folder else ""}'
                                 f'?cursor={following}>; rel="next"')
            entries = page
        return self.reply(200, json.dumps(entries).encode(), head, "application/json", extra)

    def find(self, repo_name, revision, file):
        repo = self.server.hub.repos.get(repo_name)
        if not repo or revision != repo.revision or file not in repo.files:
            return None, None
        return repo, repo.files[file]

    def route_resolve(self, path, head):
        repo_name, _, rest = path[1:].partition("/resolve/")
        revision, _, file = rest.partition("/")
        repo, entry = self.find(repo_name, revision, file)
        if not entry:
            return self.reply(404, b"Entry not found", head, extra={"X-Error-Code": "EntryNotFound"})
        common = {"X-Repo-Commit": repo.revision, "ETag": f'"{entry["oid"]}"'}
        if "lfs" in entry:  # like the hub: the hash in headers, the bytes from the CDN
            sha256 = entry["lfs"]["oid"]
            return self.reply(302, b"", head, extra={
                **common, "Location": self.server.hub.signed_url(file, sha256),
                "X-Linked-Etag": f'"{sha256}"', "X-Linked-Size": str(entry["size"])})
        return self.reply(307, b"", head, extra={
            **common, "Location": f"/api/resolve-cache/models/{repo_name}/{revision}/{urllib.parse.quote(file)}"})

    def route_resolve_cache(self, path, head):
        rest = path[len("/api/resolve-cache/models/"):]
        parts = rest.split("/")
        if len(parts) < 4:
            return self.reply(404, b"not found", head)
        repo_name, revision, file = "/".join(parts[:2]), parts[2], "/".join(parts[3:])
        repo, entry = self.find(repo_name, revision, file)
        if not entry or "lfs" in entry:
            return self.reply(404, b"Entry not found", head)
        return self.send_file(repo, file, head, {"ETag": f'"{entry["oid"]}"', "X-Repo-Commit": repo.revision})

    def route_cdn(self, path, query, head):
        hub = self.server.hub
        if not path.startswith("/repos/"):
            return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>", head, "application/xml")
        sha256 = path[len("/repos/"):]
        if head:
            return self.reply(403, b"", head, "application/xml")
        try:
            expires, given = int(query["Expires"][0]), query["Signature"][0]
        except (KeyError, ValueError):
            return self.reply(403, b"<Error><Code>AccessDenied</Code><Message>Missing signature</Message></Error>",
                              head, "application/xml")
        if not hmac.compare_digest(given, signature(sha256, expires)):
            return self.reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>", head, "application/xml")
        if expires < time.time():
            return self.reply(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                              head, "application/xml")
        found = hub.lfs.get(sha256)
        if not found:
            return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>", head, "application/xml")
        repo, file = found
        return self.send_file(repo, file, head, {"ETag": f'"{sha256}"'})

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
        piece = RATE_PIECE if hub.rate else CHUNK
        with open(path, "rb") as handle:
            handle.seek(start)
            position = start
            while position <= end:
                chunk = bytearray(handle.read(min(piece, end - position + 1)))
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
                if hub.rate:
                    time.sleep(len(chunk) / hub.rate)


def serve(hub, host, role):
    server = http.server.ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    server.hub, server.role = hub, role
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", nargs=3, action="append", default=[], metavar=("REPO", "REVISION", "DIR"))
    parser.add_argument("--log")
    parser.add_argument("--hash-cache", help="a JSON file that keeps file hashes across runs")
    parser.add_argument("--drop", action="append", default=[])
    parser.add_argument("--corrupt", action="append", default=[])
    parser.add_argument("--ignore-range", action="append", default=[])
    parser.add_argument("--status", action="append", default=[])
    parser.add_argument("--expire", action="append", default=[])
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--require-token")
    parser.add_argument("--no-listing", action="store_true")
    parser.add_argument("--bad-listing", action="store_true")
    parser.add_argument("--rate", type=float, default=0, help="bytes per second of file bodies (0: unlimited)")
    args = parser.parse_args()
    hub = Hub(args)
    hub_server, cdn_server = serve(hub, "127.0.0.1", "hub"), serve(hub, CDN_HOST, "cdn")
    hub.hub_port, hub.cdn_port = hub_server.server_address[1], cdn_server.server_address[1]
    threading.Thread(target=cdn_server.serve_forever, daemon=True).start()
    print(hub.hub_port, flush=True)
    try:
        hub_server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

"""A faithful local fake of Plaud (shared/plaud/FAKE_SERVER.md), stdlib only.

OAuth authorize/exchange/refresh with PKCE checks and rotation modes, the
developer API's list/detail/link endpoints with quirk switches, a fault plan,
a request log with secrets hashed, and a fake clock. Listens on 127.0.0.1:0.
Handlers are methods of ``FakePlaud`` taking a parsed request and returning a
``Reply``, all state behind one lock.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlparse

_WEB_PREFIXES = {"transaction": "source_transaction",
                 "transaction_polish": "source_transaction_polish", "outline": "source_outline",
                 "auto_sum_note": "auto_sum", "sum_multi_note": "sum_multi"}
DEFAULT_CLIENT = "client_9c501dad-8a0d-40b2-a7b0-d1cb8787f674"
SECRET = b"fake-plaud-signing-key"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class FakeClock:
    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self.now = start

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    cut: bool = False  # send half the body, then close

    @classmethod
    def json(cls, data: Any, status: int = 200, **headers: str) -> Reply:
        return cls(status, json.dumps(data).encode(), {"Content-Type": "application/json",
                                                       **headers})

    @classmethod
    def html(cls, text: str, status: int = 200, **headers: str) -> Reply:
        return cls(status, f"<html><body>{text}</body></html>".encode(),
                   {"Content-Type": "text/html", **headers})


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def form(self) -> dict[str, str] | None:
        if not self.headers.get("content-type", "").startswith(
                "application/x-www-form-urlencoded"):
            return None
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}

    def bearer(self) -> str | None:
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None


@dataclass
class Rule:
    """A fault: ``action`` for requests matching ``method``/``path`` regex, ``times`` times
    (``None`` = forever) after skipping ``after`` matches."""

    path: str
    action: str
    method: str | None = None
    times: int | None = 1
    after: int = 0
    args: dict[str, Any] = field(default_factory=dict)
    seen: int = 0
    fired: int = 0


@dataclass
class Config:
    access_ttl: int = 86400
    refresh_ttl: int = 7 * 86400
    code_ttl: int = 120
    link_ttl: int = 300
    token_type: str = "bearer"
    refresh_mode: str = "rotate"  # rotate | no_rotate | reject | transient | expire_after_idle
    rotation_grace_s: int = 0
    transient_left: int = 3
    authorize_mode: str = "approve"  # approve | deny | wrong_state | no_code | hang
    require_user_agent: bool = True
    link_encoding: str = "gzip_header"  # plain | gzip_header | gzip_raw
    unknown_id_status: int = 404
    cap_page_size: int | None = None
    insert_during_walk: int = 0
    delete_during_walk: int = 0
    repeat_pages: bool = False
    web_token: str = "web-session-token-for-tests"
    web_region_redirect: bool = False
    web_redirect_loop: bool = False
    web_redirect_host: str | None = None  # the -302 body's domain (default: /web2 here)
    web_wrong_region_401: bool = False  # the first host answers HTTP 401, not -302 (§8)
    web_echo_token: bool = False  # errors quote the token back (an opaque one has no shape)
    broken_ids: set[str] = field(default_factory=set)  # details that answer 500, always
    # Plaud folders (web API §8): id -> name, served by GET /filetag/; each file's
    # "filetag_id_list" says where it is filed
    filetags: dict[str, str] = field(default_factory=dict)


class FakePlaud:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.clock = FakeClock()
        self.config = Config()
        self.clients: dict[str, set[str]] = {DEFAULT_CLIENT: {
            "http://localhost:8199/auth/callback"}}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access: dict[str, dict[str, Any]] = {}  # token -> {user, exp, revoked, family}
        self.refresh: dict[str, dict[str, Any]] = {}  # token -> {state, family, issued, …}
        self.refresh_calls: dict[str, int] = {}
        self.files: list[dict[str, Any]] = []  # newest first
        self.blobs: dict[str, tuple[bytes, str]] = {}
        self.faults: list[Rule] = []
        self.log: list[dict[str, Any]] = []
        self.server: ThreadingHTTPServer | None = None
        self._walk_mutated = False
        self.deny_description = "User denied"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                url = urlparse(self.path)
                request = Request(self.command, url.path,
                                  {k: v[0] for k, v in parse_qs(url.query).items()},
                                  {k.lower(): v for k, v in self.headers.items()},
                                  self.rfile.read(length) if length else b"")
                reply = fake.handle(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for name, value in {"Content-Length": str(len(reply.body)),
                                    "Connection": "close", **reply.headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body[: len(reply.body) // 2] if reply.cut else reply.body)
                self.close_connection = True

            do_GET = do_POST = do_HEAD = do_DELETE = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.base_url

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def env(self, callback_url: str) -> dict[str, str]:
        """The overrides that point the real client at this fake."""
        with self.lock:
            self.clients[DEFAULT_CLIENT].add(callback_url)
        base = self.base_url
        return {"PLAUD_AUTH_URL": f"{base}/platform/oauth",
                "PLAUD_TOKEN_URL": f"{base}/developer/api/oauth/third-party/access-token",
                "PLAUD_REFRESH_URL":
                    f"{base}/developer/api/oauth/third-party/access-token/refresh",
                "PLAUD_MCP_API_BASE": f"{base}/developer/api",
                "PLAUD_MCP_CLIENT_ID": DEFAULT_CLIENT, "PLAUD_CALLBACK_URL": callback_url}

    # -- dispatch ------------------------------------------------------------------------
    def handle(self, request: Request) -> Reply:
        with self.lock:
            reply = self._fault(request) or self._route(request)
            self._record(request, reply)
            return reply

    def _record(self, request: Request, reply: Reply) -> None:
        headers = dict(request.headers)
        if "authorization" in headers:
            scheme, _, secret = headers["authorization"].partition(" ")
            headers["authorization"] = f"{scheme} sha256:{token_hash(secret)}"
        body = request.form() or {}
        safe_body = {k: (f"sha256:{token_hash(v)}" if k in ("code", "code_verifier",
                                                            "refresh_token") else v)
                     for k, v in body.items()}
        self.log.append({"method": request.method, "path": request.path,
                         "query": request.query, "headers": headers, "form": safe_body,
                         "status": reply.status, "ms": int(self.clock.time() * 1000)})

    def requests(self, path_fragment: str, method: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.log if path_fragment in r["path"]
                    and (method is None or r["method"] == method)]

    def _route(self, r: Request) -> Reply:
        if r.path == "/platform/oauth":
            return self.authorize(r)
        if r.path == "/developer/api/oauth/third-party/access-token":
            return self.exchange(r)
        if r.path == "/developer/api/oauth/third-party/access-token/refresh":
            return self.refresh_token(r)
        if r.path.startswith("/s3/content/"):
            return self.content(r)
        if r.path.startswith("/developer/api/open/third-party/"):
            return self.data_plane(r)
        if r.path.startswith(("/web/", "/web2/")):
            return self.web(r)
        return Reply.json({"detail": "Not Found"}, 404)

    def _fault(self, r: Request) -> Reply | None:
        for rule in self.faults:
            if (rule.method and rule.method != r.method) or not re.search(rule.path, r.path):
                continue
            rule.seen += 1
            if rule.seen <= rule.after or (rule.times is not None and rule.fired >= rule.times):
                continue
            rule.fired += 1
            return self._act(rule, r)
        return None

    def _act(self, rule: Rule, r: Request) -> Reply | None:
        a = rule.args
        if rule.action == "status":
            headers = {"Retry-After": str(a["retry_after"])} if "retry_after" in a else {}
            return Reply.json({"detail": a.get("detail", "fault")}, a["code"], **headers)
        if rule.action == "expire_access_now":
            token = r.bearer()
            if token in self.access:
                self.access[token]["revoked"] = True
            return None  # then handled normally: a 401
        if rule.action == "html":
            return Reply.html("Just a moment... (challenge)")
        if rule.action == "truncated":
            return Reply(200, b'{"type": "list", "data": [{"id": "ab', {
                "Content-Type": "application/json"})
        if rule.action == "empty":
            return Reply(200, b"", {"Content-Type": "application/json"})
        if rule.action == "wrong_shape":
            return Reply.json(a.get("body", {"data": "wrong"}))
        if rule.action == "cloudflare_403":
            return Reply.html("Access denied | Cloudflare", 403, **{"cf-ray": "fake"})
        if rule.action == "delay":
            slow = self._route(r)
            slow.delay = a["seconds"]
            return slow
        if rule.action == "drop":
            return Reply(drop=True)
        if rule.action == "reset_mid_body":
            full = self._route(r)
            return Reply(full.status, full.body, full.headers, cut=True)
        if rule.action == "redirect":
            return Reply(a.get("code", 307), b"", {"Location": a["to"]})
        raise ValueError(rule.action)

    # -- OAuth ---------------------------------------------------------------------------
    def authorize(self, r: Request) -> Reply:
        q = r.query
        client, redirect = q.get("client_id", ""), q.get("redirect_uri", "")
        if client not in self.clients:
            return Reply.html("Invalid data", 400)
        if redirect not in self.clients[client]:
            return Reply.html("Invalid redirect_uri", 400)

        def back(**params: str) -> Reply:
            return Reply(302, b"", {"Location": f"{redirect}?{urlencode(params)}"})

        state = q.get("state")
        if q.get("response_type") != "code":
            return back(error="unsupported_response_type", state=state or "")
        challenge = q.get("code_challenge", "")
        if q.get("code_challenge_method") != "S256" or not re.fullmatch(r"[A-Za-z0-9_-]{43}",
                                                                       challenge):
            return back(error="invalid_request", state=state or "")
        if not state:
            return back(error="invalid_request")
        mode = self.config.authorize_mode
        if mode == "deny":
            return back(error="access_denied", error_description=self.deny_description,
                        state=state)
        if mode == "hang":
            return Reply.html("waiting…")
        code = secrets.token_urlsafe(24)
        self.codes[code] = {"client": client, "redirect": redirect, "challenge": challenge,
                            "state": state, "user": "u_1", "issued": self.clock.time(),
                            "used": False, "tokens": []}
        if mode == "wrong_state":
            return back(code=code, state="not-" + state)
        if mode == "no_code":
            return back(state=state)
        return back(code=code, state=state)

    def _client_of(self, r: Request, form: dict[str, str]) -> str | None | Reply:
        basic = r.headers.get("authorization", "")
        client = form.get("client_id")
        if basic.lower().startswith("basic "):
            user, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            if secret:
                return Reply.json({"detail": "public client", "error": "invalid_client"}, 401)
            if client and client != user:
                return Reply.json({"detail": "client mismatch", "error": "invalid_client"}, 401)
            client = user
        return client

    def exchange(self, r: Request) -> Reply:
        form = r.form()
        if form is None:
            return self._field_required("code")
        client = self._client_of(r, form)
        if isinstance(client, Reply):
            return client
        if form.get("grant_type", "authorization_code") != "authorization_code":
            return self._grant_error("unsupported grant_type")
        entry = self.codes.get(form.get("code", ""))
        if entry is None:
            return self._grant_error("unknown code")
        if entry["used"]:
            for token in entry["tokens"]:  # RFC 6749 §4.1.2: revoke what the code minted
                self.access.get(token, {})["revoked"] = True
            return self._grant_error("code already used")
        if self.clock.time() - entry["issued"] > self.config.code_ttl:
            return self._grant_error("code expired")
        if form.get("redirect_uri") != entry["redirect"] or client != entry["client"]:
            return self._grant_error("redirect_uri or client mismatch")
        if "state" in form and form["state"] != entry["state"]:
            return self._grant_error("state mismatch")
        verifier = form.get("code_verifier", "")
        if not re.fullmatch(r"[A-Za-z0-9\-._~]{43,128}", verifier) or not hmac.compare_digest(
                b64url(hashlib.sha256(verifier.encode()).digest()), entry["challenge"]):
            return self._grant_error("PKCE verification failed")
        entry["used"] = True
        pair = self._mint(entry["user"], str(client), family=uuid.uuid4().hex)
        entry["tokens"].append(pair["access_token"])
        return Reply.json(pair)

    def _mint(self, user: str, client: str, family: str) -> dict[str, Any]:
        now = int(self.clock.time())
        payload = {"sub": user, "client_id": client, "iat": now,
                   "exp": now + self.config.access_ttl, "jti": uuid.uuid4().hex}
        head = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = b64url(json.dumps(payload).encode())
        sig = b64url(hmac.new(SECRET, f"{head}.{body}".encode(), hashlib.sha256).digest())
        access = f"{head}.{body}.{sig}"
        refresh = "rt_" + secrets.token_urlsafe(32)
        self.access[access] = {"user": user, "exp": now + self.config.access_ttl,
                               "revoked": False, "family": family}
        self.refresh[refresh] = {"user": user, "client": client, "family": family,
                                 "issued": now, "state": "active", "rotated_at": None}
        return {"access_token": access, "refresh_token": refresh,
                "token_type": self.config.token_type, "expires_in": self.config.access_ttl}

    def refresh_token(self, r: Request) -> Reply:
        form = r.form()
        if form is None or "refresh_token" not in form:
            return self._field_required("refresh_token")
        mode, now = self.config.refresh_mode, self.clock.time()
        entry = self.refresh.get(form["refresh_token"])
        if entry:
            self.refresh_calls[entry["family"]] = self.refresh_calls.get(entry["family"], 0) + 1
        if mode == "transient" and self.config.transient_left > 0:
            self.config.transient_left -= 1
            return Reply.json({"detail": "Bad Gateway"}, 502)
        if mode == "reject" or entry is None or entry["state"] == "revoked":
            return self._grant_error("refresh token expired", 401)
        if mode == "expire_after_idle" and now - entry["issued"] > self.config.refresh_ttl:
            return self._grant_error("refresh token expired", 401)
        grace = self.config.rotation_grace_s
        if entry["state"] == "rotated" and (not grace or now - entry["rotated_at"] > grace):
            self._revoke_family(entry["family"])  # reuse detection
            return self._grant_error("refresh token reused", 401)
        pair = self._mint(entry["user"], entry["client"], entry["family"])
        if mode == "no_rotate":
            del self.refresh[pair.pop("refresh_token")]
        else:
            entry.update(state="rotated", rotated_at=now)
        return Reply.json(pair)

    def _revoke_family(self, family: str) -> None:
        for table in (self.access, self.refresh):
            for entry in table.values():
                if entry["family"] == family:
                    entry["revoked" if table is self.access else "state"] = \
                        True if table is self.access else "revoked"

    @staticmethod
    def _grant_error(message: str, status: int = 400) -> Reply:
        return Reply.json({"detail": message, "error": "invalid_grant"}, status)

    @staticmethod
    def _field_required(name: str) -> Reply:
        return Reply.json({"detail": [{"type": "missing", "loc": ["body", name],
                                       "msg": "Field required", "input": None}]}, 422)

    # -- data plane ----------------------------------------------------------------------
    def _authenticated(self, r: Request) -> dict[str, Any] | Reply:
        ua = r.headers.get("user-agent", "")
        if self.config.require_user_agent and (not ua or ua.startswith("Python-urllib/")):
            return Reply.html("Access denied | Cloudflare", 403, **{"cf-ray": "fake"})
        entry = self.access.get(r.bearer() or "")
        if entry is None or entry["revoked"] or entry["exp"] <= self.clock.time():
            return Reply.json({"detail": "Not authenticated"}, 401)
        return entry

    def data_plane(self, r: Request) -> Reply:
        who = self._authenticated(r)
        if isinstance(who, Reply):
            return who
        rest = r.path.removeprefix("/developer/api/open/third-party/")
        if rest == "users/current":
            return Reply.json({"id": who["user"], "email": "test@example.com",
                               "nickname": "Tester"})
        if rest == "users/current/revoke" and r.method == "POST":
            self._revoke_family(who["family"])
            return Reply.json({})
        if rest == "files":
            return Reply(307, b"", {"Location": "/developer/api/open/third-party/files/"})
        if rest == "files/":
            return self.list_page(r)
        if rest.startswith("files/"):
            return self.detail(unquote(rest.removeprefix("files/")))
        return Reply.json({"detail": "Not Found"}, 404)

    def list_page(self, r: Request) -> Reply:
        for name, lo, hi, default in (("page", 1, 1000, "1"), ("page_size", 10, 100, "20")):
            raw = r.query.get(name, default)
            if not raw.isdigit() or not lo <= int(raw) <= hi:
                bound = "greater than or equal to" if not raw.isdigit() or int(raw) < lo \
                    else "less than or equal to"
                return Reply.json({"detail": [{"type": "range", "loc": ["query", name],
                                               "msg": f"Input should be {bound} "
                                                      f"{lo if 'greater' in bound else hi}",
                                               "input": raw}]}, 422)
        page, size = int(r.query.get("page", "1")), int(r.query.get("page_size", "20"))
        size = min(size, self.config.cap_page_size or size)
        if self.config.repeat_pages:
            page = 1
        rows = [self._row(f) for f in self.files[(page - 1) * size: page * size]]
        if page == 1 and not self._walk_mutated:
            self._walk_mutated = True
            for k in range(self.config.insert_during_walk):
                self.add_file(-1000 - k)  # newer than everything: shifts later pages
            del self.files[:self.config.delete_during_walk]
        return Reply.json({"type": "list", "data": rows, "page": page, "page_size": size})

    @staticmethod
    def _row(f: dict[str, Any]) -> dict[str, Any]:
        return {k: f[k] for k in ("id", "name", "created_at", "start_at", "duration",
                                  "serial_number")}

    def detail(self, file_id: str) -> Reply:
        if file_id in self.config.broken_ids:  # §8: a broken id answers 500, not 404
            return Reply.json({"detail": "Internal Server Error"}, 500)
        f = next((x for x in self.files if x["id"] == file_id), None)
        if f is None:
            status = self.config.unknown_id_status
            return Reply.json({"detail": "Not Found" if status == 404 else
                               "Internal Server Error"}, status)
        body = {**self._row(f), "presigned_url": None, "source_list": [], "note_list": []}
        for kind, content, link_only, *extra in f["blocks"]:
            options = extra[0] if extra else {}
            key = options.get("list") or ("note_list" if kind.endswith(("note", "template"))
                                          else "source_list")
            block = {"data_id": options.get("data_id", f"{kind}:{f['id']}"),
                     "data_type": options.get("data_type", kind), "data_title": "",
                     "data_content": "" if link_only else content, "data_link": ""}
            if key == "note_list":
                block.update(data_title="Summary", data_tab_name=options.get("tab", "Summary"),
                             data_error_code=options.get("error_code", 0))
                if options.get("untitled"):  # an action_items block without titles (§8)
                    del block["data_title"], block["data_tab_name"]
            for name in ("extra", "download_link_map"):
                if name in options:
                    block[name] = options[name]
            if link_only:
                block["data_link"] = self._sign(f"{f['id']}-{kind}", content,
                                                options.get("encoding"))
            body[key].append(block)
        if "presigned_url" in f:
            body["presigned_url"] = f["presigned_url"]
        return Reply.json(body)

    def _sign(self, blob: str, content: str, encoding: str | None = None) -> str:
        self.blobs[blob] = (content.encode(), encoding or self.config.link_encoding)
        date = str(int(self.clock.time()))
        expires = str(self.config.link_ttl)
        sig = hmac.new(SECRET, f"{blob}|{date}|{expires}".encode(), hashlib.sha256).hexdigest()
        return (f"{self.base_url}/s3/content/{blob}?X-Amz-Algorithm=AWS4-HMAC-SHA256&"
                f"X-Amz-Date={date}&X-Amz-Expires={expires}&X-Amz-Signature={sig}")

    def content(self, r: Request) -> Reply:
        if "authorization" in r.headers:
            return Reply(400, b"<Error><Code>InvalidArgument</Code><Message>Only one auth "
                              b"mechanism allowed</Message></Error>",
                         {"Content-Type": "application/xml"})
        if r.method != "GET":
            return Reply(403 if r.method == "HEAD" else 405)
        blob = r.path.removeprefix("/s3/content/")
        q = r.query
        expected = hmac.new(SECRET, f"{blob}|{q.get('X-Amz-Date')}|{q.get('X-Amz-Expires')}"
                            .encode(), hashlib.sha256).hexdigest()
        if blob not in self.blobs or not hmac.compare_digest(expected,
                                                             q.get("X-Amz-Signature", "")):
            return Reply(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>",
                         {"Content-Type": "application/xml"})
        if self.clock.time() > int(q["X-Amz-Date"]) + int(q["X-Amz-Expires"]):
            return Reply(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired"
                              b"</Message></Error>", {"Content-Type": "application/xml"})
        data, encoding = self.blobs[blob]
        if encoding == "plain":
            return Reply(200, data, {"Content-Type": "application/json"})
        headers = {"Content-Type": "application/octet-stream"}
        if encoding == "gzip_header":
            headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        return Reply(200, gzip.compress(data), headers)

    # -- web-app API (API.md §5, FAKE_SERVER.md §8) ---------------------------------------
    def web(self, r: Request) -> Reply:
        prefix, _, rest = r.path.lstrip("/").partition("/")
        if r.bearer() != self.config.web_token:
            return Reply.json({"status": -3900, "msg": "invalid auth header"})  # HTTP 200!
        if self.config.web_echo_token:
            return Reply.json({"status": -1, "msg": f"session {r.bearer()} is not allowed "
                                                     "here"})
        if prefix == "web" and self.config.web_wrong_region_401:
            return Reply.json({"detail": "Unauthorized"}, 401)  # a wrong region, §8
        if self.config.web_region_redirect and (prefix == "web" or
                                                self.config.web_redirect_loop):
            host = self.config.web_redirect_host or \
                f"127.0.0.1:{self.server.server_address[1]}/web2"  # type: ignore[union-attr]
            return Reply.json({"status": -302, "msg": "user region mismatch",
                               "data": {"domains": {"api": host}}})
        if rest == "filetag/":
            return Reply.json({"status": 0, "msg": "success", "data_filetag_list": [
                {"id": tag, "name": name, "icon": "folder", "color": "#888"}
                for tag, name in self.config.filetags.items()]})
        if rest == "file/simple/web":
            skip, limit = int(r.query.get("skip", "0")), int(r.query.get("limit", "20"))
            rows = [{"id": f["id"], "filename": f["name"], "duration": f["duration"],
                     "start_time": int(time.mktime(time.strptime(f["created_at"],
                                                                 "%Y-%m-%dT%H:%M:%S"))) * 1000,
                     "is_trash": 0, "is_trans": 1, "is_summary": 1, "scene": 102,
                     "filetag_id_list": list(f.get("filetags", []))}
                    for f in self.files[skip: skip + limit]]
            return Reply.json({"status": 0, "msg": "success", "data_file_total": len(self.files),
                               "data_file_list": rows})
        if rest.startswith("file/detail/"):
            f = next((x for x in self.files if x["id"] == rest.removeprefix("file/detail/")),
                     None)
            if f is None:
                return Reply.json({"status": -1, "msg": "file not found"})
            return Reply.json({"status": 0, "msg": "success", "request_id": "",
                               "data": self._web_detail(f)})
        return Reply.json({"detail": "Not Found"}, 404)

    def _web_detail(self, f: dict[str, Any]) -> dict[str, Any]:
        """The web detail (API.md §5, §8): every block a link in ``content_list`` (gzip),
        notes inline in ``pre_download_content_list`` unless ``web_link`` asks for a JSON
        summary body behind the link; ``extra`` (tab templates) carried as given."""
        content, inline = [], []
        for kind, text, _link_only, *extra in f["blocks"]:
            options = extra[0] if extra else {}
            # ids as the web API spells them: a kind's prefix, a hex part, the file id
            data_id = options.get("data_id", f"{_WEB_PREFIXES.get(kind, kind)}:1a2b3c4d:"
                                             f"{f['id']}")
            block = {"data_id": data_id, "data_type": options.get("data_type", kind),
                     "task_status": 1, "data_title": options.get("title", ""),
                     "data_tab_name": options.get("tab", ""), "data_link": "",
                     "extra": options.get("extra", {})}
            is_note = kind.endswith(("note", "template")) or options.get("list") == "note_list"
            if is_note and not options.get("web_link"):
                inline.append({"data_id": data_id, "data_content": text})
            else:
                body = json.dumps({"ai_content": text, "header": {
                    "headline": options.get("headline", ""), "category": "meeting"},
                    "summ_type": "MEETING-REPORT", "state": 1}) if is_note else text
                saved = self.config.link_encoding
                self.config.link_encoding = "gzip_header"
                block["data_link"] = self._sign(f"web-{f['id']}-{data_id}", body)
                self.config.link_encoding = saved
            content.append(block)
        return {"file_id": f["id"], "file_name": f["name"], "duration": f["duration"],
                "start_time": 1_780_000_000_000, "scene": 102,
                "filetag_id_list": list(f.get("filetags", [])),
                "content_list": content, "pre_download_content_list": inline}

    # -- seed data -----------------------------------------------------------------------
    def add_file(self, i: int, *, link_only: bool = False, name: str | None = None,
                 topic: str | None = None, created_epoch: float | None = None
                 ) -> dict[str, Any]:
        file_id = hashlib.sha256(f"42:{i}".encode()).hexdigest()[:32]
        topic = topic or f"project {i} milestone review"
        day = time.gmtime(created_epoch if created_epoch is not None
                          else 1_780_000_000 - i * 3600)
        created = time.strftime("%Y-%m-%dT%H:%M:%S", day)
        segments = [{"start_time": k * 6000, "end_time": k * 6000 + 5000,
                     "content": f"Point {k} about {topic}.", "speaker": f"Speaker {k % 2 + 1}",
                     "original_speaker": f"Speaker {k % 2 + 1}"} for k in range(6)]
        note = json.dumps({"ai_content": f"## Summary\nThe meeting covered {topic}."})
        f = {"id": file_id, "name": name or f"Recording {i}", "created_at": created,
             "start_at": created + ".052000", "duration": 36000, "serial_number": None,
             "blocks": [("transaction", json.dumps(segments), link_only),
                        ("auto_sum_note", note if not link_only else
                         f"## Summary\nThe meeting covered {topic}.", link_only)]}
        self.files.append(f)
        self.files.sort(key=lambda x: x["created_at"], reverse=True)  # newest first
        return f

    def add_meeting(self, record: dict[str, Any]) -> dict[str, Any]:
        """A recording of the ``shared/eval`` format (a real-length meeting) as Plaud
        serves it: naive UTC times, ms, an inline transaction and a summary note."""
        segments = [{"start_time": int(s["start"] * 1000), "end_time": int(s["end"] * 1000),
                     "content": s["text"], "speaker": s["speaker"],
                     "original_speaker": s["speaker"]} for s in record["transcript"]]
        created = str(record["created_at"]).replace("Z", "").split("+")[0]
        f = {"id": record["id"], "name": record["name"], "created_at": created,
             "start_at": created, "duration": int(record["duration"] * 1000),
             "serial_number": None,
             "blocks": [("transaction", json.dumps(segments), False),
                        ("auto_sum_note", f"## Summary\n{record.get('note') or ''}", False)]}
        with self.lock:
            self.files.append(f)
            self.files.sort(key=lambda x: x["created_at"], reverse=True)
        return f

    def update_note(self, file_id: str, markdown: str) -> None:
        f = next(x for x in self.files if x["id"] == file_id)
        f["blocks"] = [b if not b[0].endswith("note") else (b[0], markdown, *b[2:])
                       for b in f["blocks"]]

    def delete_file(self, file_id: str) -> None:
        self.files = [x for x in self.files if x["id"] != file_id]

    def add_special(self, name: str) -> dict[str, Any]:
        """The named fixtures of FAKE_SERVER.md §4."""
        f = self.add_file(hash(name) % 10_000 + 20_000, name=f"special {name}")
        seg = json.loads(f["blocks"][0][1])
        md = "## Summary\nDiscussed the special case."
        blocks: list[tuple[Any, ...]] = {
            "inline_full": [("transaction", json.dumps(seg), False),
                            ("outline", json.dumps([{"start_time": 0, "topic": "T"}]), False),
                            ("auto_sum_note", md, False)],
            "note_json_wrapped": [("transaction", json.dumps(seg), False),
                                  ("auto_sum_note", json.dumps({"ai_content": md, "category":
                                                                "Summary", "state": 10}),
                                   False)],
            "link_only_transcript": [("transaction", json.dumps(seg), True)],
            "link_only_polish": [("transaction", json.dumps(seg), False),
                                 ("transaction_polish", json.dumps(
                                     [{**x, "content": "Polished " + x["content"]} for x in seg]),
                                  True)],
            "gzip_raw_link": [("transaction", json.dumps(seg), True, {"encoding": "gzip_raw"})],
            "unprocessed": [],
            "null_speakers": [("transaction", json.dumps([
                {"start_time": 0, "end_time": 1000, "content": "One.", "speaker": None,
                 "original_speaker": "Speaker 1"},
                {"start_time": 1000, "end_time": 2000, "content": "Two.", "speaker": "",
                 "original_speaker": "Speaker 2"},
                {"start_time": 2000, "content": "Three.", "original_speaker": "Speaker 1"},
                {"start_time": 3000, "end_time": 4000, "content": "   ", "speaker": "A"}]),
                False)],
            "multi_notes": [("transaction", json.dumps(seg), False),
                            ("auto_sum_note", md, False),
                            ("sum_multi_note", "## Minutes\n- item", False,
                             {"tab": "Meeting Minutes"}),
                            ("custom_template", "## Custom\nA custom template.", False,
                             {"tab": "Custom"})],
            "note_error": [("transaction", json.dumps(seg), False),
                           ("auto_sum_note", "Point 0 about the transcript itself.", False,
                            {"error_code": 10})],
            # What published samples show of real payloads (API.md §8), one shape each:
            "summary_error_10": [("transaction", json.dumps(seg), False),
                                 ("auto_sum_note", json.dumps({
                                     "ai_content": "## Summary\nThe zebra procurement was "
                                                   "approved by the board.",
                                     "category": "Summary", "state": 10}), False,
                                  {"error_code": 10})],
            "highlights_array": [("transaction", json.dumps(seg), False),
                                 ("high_light", json.dumps([
                                     {"content": "The kiwi launch slips to March",
                                      "timestamp": 750000, "title": "Launch date",
                                      "picture_link": ""}]), False,
                                  {"list": "note_list", "tab": "Highlights"})],
            "highlights_markdown": [("transaction", json.dumps(seg), False),
                                    ("high_light", "- **Osprey budget** approved", False,
                                     {"list": "note_list", "tab": "Highlights",
                                      "error_code": 1})],
            "device_marks": [("transaction", json.dumps(seg), False),
                             ("mark_memo", json.dumps({"marks": [
                                 {"timestamp": 91000, "mark_type": 1, "mark_type_string": "flag",
                                  "mark_content": "pelican contract clause", "content": "",
                                  "title": "", "mark_id": "m1", "mark_status": 0}]}), False)],
            "note_image": [("transaction", json.dumps(seg), False),
                           ("auto_sum_note", "## Summary\nThe whiteboard of the heron plan.\n"
                            "![PLAUD NOTE](permanent/abc123/poster.png)", False,
                            {"download_link_map": {"permanent/abc123/poster.png":
                                                   "https://example.invalid/poster.png"}})],
            "verbatim_and_polish": [
                ("transaction", json.dumps([{**seg[0], "content": "Um, so, uh, the walrus "
                                             "budget is, you know, basically fine."}]), False),
                ("transaction_polish", json.dumps([{**seg[0], "content": "The budget is "
                                                    "fine."}]), True)],
            "heading_only_note": [("transaction", json.dumps(seg), False),
                                  ("auto_sum_note", "# Custom summary", False)],
            "untitled_action_items": [("transaction", json.dumps(seg), False),
                                      ("action_items", "- Ann: send the toucan deck", False,
                                       {"list": "note_list", "untitled": True})],
            "unicode": [("transaction", json.dumps([{"start_time": 0, "end_time": 900,
                                                     "content": "会议 🎉 שלום", "speaker": "李"}]),
                         False)],
            "long": [("transaction", json.dumps([
                {"start_time": k * 1000, "end_time": k * 1000 + 900, "speaker": "S",
                 "content": "A fairly long sentence of meeting talk about nothing much " * 6}
                for k in range(5000)]), False)],
            "weird_id": [("transaction", json.dumps(seg), False)],
            "micro_ts": [("transaction", json.dumps(seg), False)],
            "string_duration": [("transaction", json.dumps(seg), False)],
            "no_serial": [("transaction", json.dumps(seg), False)],
        }[name]
        f["blocks"] = blocks
        if name == "unprocessed":
            f["duration"] = 0
        if name == "unicode":
            f["name"] = '会议 "notes" / 🎉\nשלום'
        if name == "weird_id":
            f["id"] = "id with/slash?&%"
        if name == "micro_ts":
            f["created_at"] = f["created_at"][:19]
            f["start_at"] = f["created_at"] + ".123456"
        if name == "string_duration":
            f["duration"] = "600000"
        return f

    def seed(self, n: int, link_every: int = 3) -> None:
        with self.lock:
            for i in range(n):
                self.add_file(i, link_only=(i % link_every == 0))

"""Signing in from the client: ``plaud_sign_in``, ``plaud_sign_out``, and the sign-in link a
question answers with while nobody is signed in (a normal answer, not an error).

The link is the server's own PKCE loopback (``plaud.client_sign_in``): the person opens it,
signs in to Plaud in the browser, and the next question works, with no terminal and no
restart. Where the client supports URL-mode elicitation the link is also offered that
way (the client opens it for the person), and completion is announced
(``notifications/elicitation/complete``). Tokens go where ``login`` puts them; nothing of
them is in any answer.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from ..config import Config
from ..errors import LoginError, PlaudIndexError
from ..plaud import auth_status, sign_in_desk, sign_out
from ..results import SignInResult
from .failures import answered, guarded

log = logging.getLogger(__name__)

ELICIT_WAIT_S = 30.0  # how long a question waits for the client to take the link


class Account:
    """One per server process."""

    def __init__(self, config: Config, on_signed_in: Callable[[], object]) -> None:
        self.config = config
        self._then = on_signed_in
        self.desk = sign_in_desk(config, self._signed_in)
        self._waiting: list[tuple[Any, str, Any]] = []  # (session, elicitation id, token)
        self._lock = threading.Lock()

    def status(self) -> SignInResult | None:
        """Signed in already (or nothing to sign in to): who; else ``None``."""
        auth = auth_status(self.config)
        if not auth.signed_in:
            return None
        who = auth.account or ("your Plaud account" if auth.method == "oauth" else auth.method)
        return SignInResult(True, who, f"Signed in to Plaud as {who}.")

    def link(self) -> tuple[Any, str]:
        """The sign-in link and what to tell the person about it."""
        link = self.desk.link()
        until = self.config.zone.local(datetime.fromtimestamp(link.expires_at, timezone.utc))
        note = (f"Not signed in to Plaud yet. Open this link in a browser and sign in to "
                f"Plaud (it works until {until.strftime('%H:%M')}): {link.url} — then ask "
                "again. The first sync starts by itself once you are signed in; no terminal "
                "and no restart are needed.")
        return link, note

    async def sign_in(self, ctx: Context[Any, Any] | None) -> SignInResult:
        """Who is signed in, or the link (offered by URL elicitation where the client can)."""
        done = await anyio.to_thread.run_sync(self.status)
        if done is not None:
            return done
        try:
            link, note = await anyio.to_thread.run_sync(self.link)
        except LoginError as exc:
            return SignInResult(False, None, f"Cannot offer a sign-in link now: {exc}")
        await self._offer(ctx, link, note)
        until = datetime.fromtimestamp(link.expires_at, timezone.utc)
        return SignInResult(False, None, note, link.url,
                            self.config.zone.local(until).isoformat(timespec="seconds"))

    async def _offer(self, ctx: Context[Any, Any] | None, link: Any, note: str) -> None:
        """URL-mode elicitation, where the client declared it; a client that does not
        answer within ``ELICIT_WAIT_S`` still has the link in the answer."""
        caps = ctx.client_capabilities if ctx is not None else None
        elicitation = getattr(caps, "elicitation", None) if caps is not None else None
        if ctx is None or getattr(elicitation, "url", None) is None:
            return
        ident = secrets.token_hex(8)
        with self._lock:
            self._waiting.append((ctx.session, ident, anyio.lowlevel.current_token()))
        with anyio.move_on_after(ELICIT_WAIT_S):
            try:
                result = await ctx.elicit_url("Sign in to Plaud to search your recordings.",
                                              link.url, ident)
                log.info("The client answered the sign-in link with %s", result.action)
            except Exception as exc:  # the client refused the request: the link stays
                log.info("URL elicitation failed (%s); the link is in the answer",
                         type(exc).__name__)

    def _signed_in(self, account: str) -> None:
        """The browser came back and the tokens are stored (on the sign-in's thread)."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for session, ident, token in waiting:
            try:
                anyio.from_thread.run(session.send_elicit_complete, ident, token=token)
            except Exception as exc:  # the session ended meanwhile
                log.debug("Could not announce the completed sign-in: %s", exc)
        try:
            self._then()
        except PlaudIndexError as exc:
            log.warning("Signed in, but the first sync cannot start yet: %s", exc)

    def sign_out(self) -> SignInResult:
        signed_out = sign_out(self.config)
        note = ("Signed out of Plaud: the sign-in is revoked and its tokens deleted. What is "
                "indexed stays searchable; sign in again to keep it fresh." if signed_out else
                "Nobody was signed in to Plaud.")
        return SignInResult(False, None, note)

    def close(self) -> None:
        self.desk.close()


SIGN_IN_DESCRIPTION = """Sign in to Plaud, or say who is signed in. While nobody is, every
other tool answers with the same link. Returns a link to open in a browser (the person signs
in to Plaud there; nothing else is needed: no terminal, no restart) and until when it
works; or, when signed in, the account's name. Use it when the user asks to sign in or to
switch accounts (after plaud_sign_out)."""

SIGN_OUT_DESCRIPTION = """Sign out of Plaud: the sign-in is revoked at Plaud and its tokens
deleted from this machine. The recordings indexed so far stay searchable, but the index no
longer syncs until someone signs in again (plaud_sign_in). Only when the user asks for it."""

SIGN_IN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                          open_world_hint=True)
SIGN_OUT = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                           open_world_hint=True)


def register_account_tools(server: MCPServer[Any], account: Account) -> None:
    @server.tool(name="plaud_sign_in", title="Sign in to Plaud",
                 description=SIGN_IN_DESCRIPTION, annotations=SIGN_IN)
    @guarded
    async def plaud_sign_in(ctx: Context[Any, Any]) -> Annotated[CallToolResult, SignInResult]:
        signed = await account.sign_in(ctx)
        return answered(signed.note, signed)

    @server.tool(name="plaud_sign_out", title="Sign out of Plaud",
                 description=SIGN_OUT_DESCRIPTION, annotations=SIGN_OUT)
    @guarded
    async def plaud_sign_out() -> Annotated[CallToolResult, SignInResult]:
        signed = await anyio.to_thread.run_sync(account.sign_out)
        return answered(signed.note, signed)

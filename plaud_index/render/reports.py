"""The text rendering of the reports about the tool itself: ``status``, the mirror's
report, ``doctor``'s checks and the sign-in. Pure.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..clock import UserZone
from ..reports import AuthStatus, Check, MirrorReport, MirrorStatus, Status
from .answers import printable


def _local(epoch: float | None, zone: UserZone) -> str:
    if not epoch:
        return "never"
    return zone.local(datetime.fromtimestamp(epoch, timezone.utc)).strftime(
        "%Y-%m-%d %H:%M:%S %z")


def _local_iso(iso: str | None, zone: UserZone) -> str:
    if not iso:
        return "never"
    return _local(datetime.fromisoformat(iso).timestamp(), zone)


def _sign_in(auth: AuthStatus | None) -> str:
    if auth is None:
        return "-"
    if not auth.signed_in:
        return "not signed in (run `plaud-index-mcp login`)"
    until = f", token until {auth.expires_at}" if auth.expires_at else ""
    return f"{auth.account or 'signed in'} via {auth.method}{until}"


def render_status(status: Status, zone: UserZone) -> str:
    """Every time in ``zone``, which the first line names."""
    model = status.model or {}
    holder = status.lock_holder
    who = f"pid {holder.get('pid')} ({holder.get('role')})" if holder else "no"
    daemon = status.daemon or {}
    lines = [
        f"Times:        {zone.name}",
        f"Index:        {status.index}",
        f"Recordings:   {status.recordings}   chunks: {status.chunks}",
        f"Model:        {model['id']}  ({str(model.get('sha256', ''))[:12]})" if model
        else "Model:        - (no index yet)",
        f"Last commit:  {_local_iso(status.last_commit, zone)}",
        f"Last sync:    {_local(status.last_success, zone)}",
        f"Last error:   {status.last_error or '-'}",
        f"Indexing now: {who}",
        f"Plaud:        {_sign_in(status.auth)}",
        f"Daemon:       {'pid ' + str(daemon['pid']) if daemon.get('pid') else 'not running'}",
    ]
    if status.skipped:
        lines.append(f"Skipped:      {len(status.skipped)} recording(s): "
                     + ", ".join(list(status.skipped)[:5]))
    for file_id, entry in list((status.failing or {}).items())[:5]:
        lines.append(f"Failing:      {file_id} since {_local(entry.get('since'), zone)}, "
                     f"{entry.get('tries')} tries, next {_local(entry.get('next'), zone)}: "
                     f"{entry.get('error')}")
    if status.empty_notes:
        lines.append(f"Empty notes:  {len(status.empty_notes)} recording(s) with notes Plaud "
                     "sent without text: " + "; ".join(
                         f"{fid}: {why}" for fid, why in list(status.empty_notes.items())[:3]))
    if status.folders_note:
        lines.append(f"Folders:      {status.folders_note}")
    if status.pending:
        lines.append(f"Pending:      {status.pending} recording(s) still being processed by "
                     "Plaud")
    if status.mirror:
        lines.append(f"Mirror:       {mirror_line(status.mirror, zone)}")
    health = status.health
    lines.append(f"Health:       {'ok' if health.ok else '; '.join(health.flags)}")
    if status.language_advice:
        lines.append(f"Languages:    {status.language_advice}")
    return printable("\n".join(lines))


def mirror_line(mirror: MirrorStatus, zone: UserZone) -> str:
    """``~/Notes/Plaud: 73 files, last written 2026-07-08 14:02 (1 edited file kept)``"""
    text = f"{mirror.folder}: {mirror.files} files, last written " \
        f"{_local(mirror.last_write, zone)}"
    if mirror.kept_edits:
        text += f" ({mirror.kept_edits} edited file(s) kept, new versions beside them)"
    return text


def render_mirror_report(report: MirrorReport) -> str:
    lines = [f"Mirror {report.folder}: {report.listed} recordings, {report.written} files "
             f"written ({report.renamed} renamed), {report.unchanged} unchanged, "
             f"{report.trashed} moved to .trash, in {report.seconds:.1f}s"]
    if report.kept_edits:
        lines.append(f"{report.kept_edits} file(s) you edited were left as they are; the new "
                     "version of each is beside it, named \"… (updated).md\"")
    if report.failed:
        lines.append(f"{report.failed} file(s) could not be written: see `plaud-index-mcp "
                     "status`")
    lines += [f"Skipped {error}" for error in report.errors]
    return printable("\n".join(lines))


_MARKS = {"ok": "ok  ", "fail": "FAIL", "warn": "warn", "skip": "skip"}


def render_checks(checks: list[Check]) -> str:
    lines = []
    for check in checks:
        lines.append(f"[{_MARKS[check.status]}] {check.name}: {check.detail}")
        if check.fix and check.status in ("fail", "warn"):
            lines.append(f"       fix: {check.fix}")
    failed = sum(c.status == "fail" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    lines.append(f"{failed} check(s) failed." if failed else
                 f"No check failed; {warned} with a warning (above)." if warned else
                 "All checks passed.")
    return printable("\n".join(lines))


def render_auth(auth: AuthStatus) -> str:
    if not auth.signed_in:
        return printable(f"{auth.problem or 'Not signed in to Plaud.'}\n"
                         f"Token store: {auth.token_store}\nAPI:         {auth.api_base}")
    lines = [f"Signed in:   {auth.account or 'yes (account not recorded)'} via {auth.method}",
             f"Token store: {auth.token_store}", f"API:         {auth.api_base}"]
    if auth.expires_at:
        renew = "renewed automatically" if auth.refreshable else "no refresh token: log in " \
            "again when it expires"
        lines.append(f"Expires:     {auth.expires_at} ({renew})")
    if auth.reachable is not None:
        verdict = "accepts the sign-in" if auth.problem is None else auth.problem
        lines.append(f"Plaud:       {verdict}")
    return printable("\n".join(lines))

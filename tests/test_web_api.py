"""Scenario 17: the PLAUD_API_TOKEN web-API override against the fake's web mode."""

from __future__ import annotations

import pytest
from fake_plaud import FakePlaud

from plaud_index.config import build_config
from plaud_index.errors import PlaudAuthError, PlaudUpstreamError, SourceError
from plaud_index.plaud import PlaudSource, make_source
from plaud_index.plaud.documents import normalize_recording
from plaud_index.plaud.transport import Transport
from plaud_index.plaud.web_api import WebClient


@pytest.fixture
def fake(fake: FakePlaud) -> FakePlaud:
    fake.seed(130)
    return fake


def web(fake: FakePlaud, token: str | None = None) -> WebClient:
    return WebClient(token or fake.config.web_token, f"{fake.base_url}/web",
                     Transport(sleep=lambda s: None))


def test_skip_limit_paging_walks_everything(fake: FakePlaud) -> None:
    files = web(fake).list_files()
    assert len(files) == 130 and len({f["id"] for f in files}) == 130
    skips = [r["query"]["skip"] for r in fake.requests("/file/simple/web")]
    assert skips == ["0", "100"]
    assert all("page" not in r["query"] for r in fake.requests("/file/simple/web"))


def test_detail_link_is_gunzipped_and_summary_read_inline(fake: FakePlaud) -> None:
    file_id = fake.files[0]["id"]
    recording = normalize_recording(web(fake).get_file(file_id))
    assert len(recording.utterances) == 6 and recording.utterances[1].start_ms == 6000
    assert [n.note_title for n in recording.notes] == ["Summary"]
    assert all("authorization" not in r["headers"] for r in fake.requests("/s3/"))


def test_status_minus_3900_is_an_auth_error(fake: FakePlaud) -> None:
    with pytest.raises(PlaudAuthError, match="PLAUD_API_TOKEN was rejected"):
        web(fake, token="stale").list_files()


def test_region_redirect_is_followed_once(fake: FakePlaud) -> None:
    fake.config.web_region_redirect = True
    client = web(fake)
    assert len(client.list_files()) == 130
    assert client.base.endswith("/web2")
    fake.config.web_redirect_loop = True
    with pytest.raises(PlaudUpstreamError, match="redirect loop"):
        web(fake).list_files()


def test_the_override_is_used_only_when_set(fake: FakePlaud, tmp_path: object) -> None:
    source = make_source(build_config({
        "PLAUD_INDEX_HOME": str(tmp_path), "PLAUD_API_TOKEN": fake.config.web_token,
        "PLAUD_API_BASE": f"{fake.base_url}/web"}, None))
    assert isinstance(source, PlaudSource) and isinstance(source.client, WebClient)
    with pytest.raises(SourceError, match="Not signed in to Plaud"):
        make_source(build_config({"PLAUD_INDEX_HOME": str(tmp_path), "HOME": str(tmp_path)},
                                 None))


def test_a_wrong_regional_host_answering_401_is_named_with_the_fix(fake: FakePlaud) -> None:
    fake.config.web_wrong_region_401 = True
    with pytest.raises(PlaudAuthError, match="another region .*api-jp.plaud.ai"):
        web(fake).list_files()


@pytest.mark.parametrize("host", ["evil.example/web2", "https://evil.example",
                                  "http://api-euc1.plaud.ai"])
def test_a_region_switch_elsewhere_than_an_https_plaud_host_is_refused(
        fake: FakePlaud, host: str) -> None:
    fake.config.web_region_redirect = True
    fake.config.web_redirect_host = host
    with pytest.raises(PlaudUpstreamError, match="not an https \\*.plaud.ai host"):
        web(fake).list_files()
    assert not [r for r in fake.log if "evil" in r["path"]]


def test_a_token_pasted_with_its_bearer_prefix_is_accepted(fake: FakePlaud) -> None:
    pasted = f"Bearer {fake.config.web_token}\n"
    assert len(web(fake, token=pasted).list_files()) == 130
    assert all(r["headers"]["authorization"].count("earer") == 1
               for r in fake.requests("/file/simple/web"))

"""URL user info never shown: splitting never raises, secrets holding ``/``, ``@``, ``:`` are masked whole."""

from __future__ import annotations

import io
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artifacts.logs import JsonFormatter
from artifacts.redact import redact, remember_secret, safe_url, split_userinfo

SECRETS = ["plain-secret-0023", "se/cr/et-0023", "p@ss@word-0023", "a:b:c-0023", "x/y@z:w%2F-0023"]


@pytest.mark.parametrize("secret", SECRETS)
def test_user_info_is_split_off_whatever_it_holds(secret: str) -> None:
    url = f"http://AKIAUSER0023:{secret}@minio.example:9000"
    bare, info = split_userinfo(url)
    assert bare == "http://minio.example:9000" and info == f"AKIAUSER0023:{secret}"
    assert safe_url(url) == "http://minio.example:9000"
    assert split_userinfo(url + "/base/path") == ("http://minio.example:9000/base/path", info)
    # without remembering it, any URL-shaped occurrence in free text is still masked
    text = f"Could not connect to the endpoint URL: \"{url}/bucket/CURRENT\" (retry 3)"
    assert secret not in redact(text) and "AKIAUSER0023" not in redact(text)
    assert "minio.example:9000/bucket/CURRENT" in redact(text)


def test_a_remembered_secret_is_masked_in_any_form_and_in_every_log_line() -> None:
    remember_secret("AKIAUSER0023:se/cr@t:x-0023-remembered")
    for form in ("se/cr@t:x-0023-remembered", "se%2Fcr%40t%3Ax-0023-remembered"):
        assert form not in redact(f"message naming {form} outside a URL")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("gitrag.test-redact")
    logger.addHandler(handler)
    try:
        logger.warning("endpoint %s failed", "http://k:se/cr@t:x-0023-remembered@h:1",
                       extra={"endpoint": "https://u:p@ss-0023@h"})
    finally:
        logger.removeHandler(handler)
    line = stream.getvalue()
    record = json.loads(line)  # still one valid JSON object
    assert "se/cr@t" not in line and "p@ss-0023" not in line and record["msg"].endswith("@h:1 failed")


def test_urls_without_user_info_are_kept() -> None:
    for url in ("http://127.0.0.1:9000", "https://s3.eu-west-1.amazonaws.com/x", "s3://bucket/prefix"):
        assert safe_url(url) == url and redact(url) == url
    assert safe_url(None) is None and safe_url("") is None


@given(st.text(max_size=200))
def test_splitting_and_redacting_never_raise(text: str) -> None:
    bare, info = split_userinfo(text)
    assert isinstance(bare, str)
    assert info is None or "@" not in bare.partition("://")[2].split("/", 1)[0]
    assert isinstance(redact(text), str)
    assert safe_url("http://" + text) is not None

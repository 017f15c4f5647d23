import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.core.redact import MASK, install_log_redaction, mask_url, redact_text, register_secrets, url_secrets


@pytest.mark.parametrize(
    ("url", "masked", "secrets"),
    [
        ("postgresql+psycopg://gym:PASSWORD@db/gymloop", "postgresql+psycopg://gym:***@db/gymloop", ["PASSWORD"]),
        ("http://user:PASSWORD@mlflow:5000", "http://user:***@mlflow:5000", ["PASSWORD"]),
        ("https://TOKENVALUE@factory.internal:8765/v1", "https://***@factory.internal:8765/v1", ["TOKENVALUE"]),
        ("http://h:1/v1?api_key=K123&x=1", "http://h:1/v1?api_key=***&x=1", ["K123"]),
        ("http://h/?access_token=T999&page=2", "http://h/?access_token=***&page=2", ["T999"]),
        ("postgresql+psycopg://gymloop@127.0.0.1/gymloop", "postgresql+psycopg://gymloop@127.0.0.1/gymloop", []),
        ("sqlite:////home/u/.gymloop/registry.db", "sqlite:////home/u/.gymloop/registry.db", []),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1", []),
    ],
)
def test_mask_url_hides_passwords_http_userinfo_and_token_queries(url: str, masked: str, secrets: list[str]) -> None:
    assert mask_url(url) == masked
    assert url_secrets(url) == secrets
    for secret in secrets:
        assert secret not in mask_url(url)


def test_a_malformed_url_is_left_to_the_text_redactor() -> None:
    assert mask_url("http://h:notaport/x") == "http://h:notaport/x"


@pytest.mark.parametrize("port", ["99999", "notaport", "80a", ""])
def test_a_url_with_a_malformed_port_still_has_its_secrets_masked(port: str) -> None:
    url = f"http://user:PW-{port}-1234@127.0.0.1:{port}/v1?api-key=Q-5678"
    assert url_secrets(url) == [f"PW-{port}-1234", "Q-5678"]
    assert mask_url(url) == f"http://user:***@127.0.0.1:{port}/v1?api-key=***"
    shown = redact_text(f"model m at {url} is unreachable")
    assert shown == f"model m at http://user:***@127.0.0.1:{port}/v1?api-key=*** is unreachable"


def test_redact_text_masks_urls_bearer_credentials_and_given_secrets() -> None:
    text = ("connect to postgresql://gym:hunter22@db/x failed; header Authorization: Bearer abc.def-123 "
            "and key sk-live-0001 in a sentence")
    out = redact_text(text, ["sk-live-0001"])
    assert "hunter22" not in out and "abc.def-123" not in out and "sk-live-0001" not in out
    assert "postgresql://gym:***@db/x" in out
    assert "Bearer ***" in out
    assert out.count(MASK) == 3


def test_short_values_are_not_treated_as_secrets() -> None:
    assert redact_text("a b c", ["a"]) == "a b c"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.~", min_size=6, max_size=40))
def test_any_password_in_a_database_url_is_masked(password: str) -> None:
    url = f"postgresql+psycopg://gym:{password}@db:5432/gymloop"
    assert password not in mask_url(url).replace("postgresql+psycopg://gym:", "").replace("@db:5432/gymloop", "")
    assert url_secrets(url) == [password]


def test_log_records_of_any_logger_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    register_secrets(["registered-secret-42"])
    install_log_redaction()
    logger = logging.getLogger("some.library")
    with caplog.at_level(logging.INFO):
        logger.info("using %s and %s", "registered-secret-42", "http://u:pw-in-url@host/")
        try:
            raise RuntimeError("failed with registered-secret-42")
        except RuntimeError:
            logger.exception("boom")
    text = caplog.text
    assert "registered-secret-42" not in text
    assert "pw-in-url" not in text
    assert "using *** and http://u:***@host/" in text
    assert "RuntimeError: failed with ***" in text


def test_redacted_records_keep_their_arguments_for_handlers_that_read_them() -> None:
    from uvicorn.logging import AccessFormatter

    register_secrets(["registered-secret-42"])
    install_log_redaction()
    formatter = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False)
    args = ("127.0.0.1:5000", "GET", "/v1/info?token=registered-secret-42", "1.1", 200)
    record = logging.getLogger("uvicorn.access").makeRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d', args, None)
    assert isinstance(record.args, tuple) and len(record.args) == 5 and record.args[4] == 200
    line = formatter.format(record)
    assert "registered-secret-42" not in line
    assert line.startswith('127.0.0.1:5000 - "GET /v1/info?token=*** HTTP/1.1" 200')
    clean = logging.getLogger("uvicorn.access").makeRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/v1/info", "1.1", 200), None)
    assert clean.args == ("127.0.0.1:5000", "GET", "/v1/info", "1.1", 200)
    spanning = logging.getLogger("x").makeRecord("x", logging.INFO, __file__, 1, "key registered-secret-%s", ("42",),
                                                 None)
    assert spanning.getMessage() == "key ***"

from recordsync.errors import (
    EXIT_ABORTED,
    EXIT_CONFIG,
    EXIT_ROWS_FAILED,
    AccountingError,
    ApiError,
    AuthError,
    ConfigError,
    ObjectTypeNotFound,
    RecordsyncError,
    RetriableApiError,
    RowError,
    RunAborted,
    SourceError,
    exit_code_for,
)


def test_config_error_names_file_line_and_key() -> None:
    err = ConfigError(
        "unknown key",
        file="configs/contacts.yaml",
        line=7,
        key="fields.emial",
        hint="did you mean 'email'?",
    )
    text = str(err)
    assert text.startswith("configs/contacts.yaml:7 [fields.emial]: unknown key")
    assert "hint: did you mean 'email'?" in text
    assert (err.file, err.line, err.key) == ("configs/contacts.yaml", 7, "fields.emial")


def test_api_error_names_method_path_and_status() -> None:
    err = RetriableApiError(
        "Service unavailable", status=503, method="POST", path="/api/objects/contacts/batch"
    )
    assert str(err) == "POST /api/objects/contacts/batch: HTTP 503: Service unavailable"


def test_every_branch_has_its_exit_code() -> None:
    assert exit_code_for(ConfigError("x")) == EXIT_CONFIG
    assert exit_code_for(SourceError("x")) == EXIT_CONFIG
    assert exit_code_for(AuthError("x", status=401)) == EXIT_ABORTED
    assert exit_code_for(ObjectTypeNotFound("x", status=404)) == EXIT_ABORTED
    assert exit_code_for(RunAborted("x")) == EXIT_ABORTED
    assert exit_code_for(AccountingError("x")) == EXIT_ROWS_FAILED
    assert exit_code_for(RowError("x", column="email")) == EXIT_ROWS_FAILED
    assert exit_code_for(ValueError("not ours")) == EXIT_ABORTED


def test_tree_shape() -> None:
    for cls in (ConfigError, RowError, ApiError, AccountingError, RunAborted):
        assert issubclass(cls, RecordsyncError)
    assert issubclass(AuthError, ApiError)
    assert not issubclass(RetriableApiError, AuthError)


def test_detail_keeps_the_bare_message_for_rewrapping() -> None:
    err = ApiError("Invalid API key", status=401, method="GET", path="/api/meta/schema")
    again = ApiError(err.detail, status=err.status, method=err.method, path=err.path)
    assert str(again) == "GET /api/meta/schema: HTTP 401: Invalid API key"
    assert ConfigError("bad", file="a.yaml", key="k").detail == "bad"

from recordsync.core.errors import (
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


def test_config_error_names_only_what_it_was_given() -> None:
    assert str(ConfigError("bad")) == "bad"
    assert str(ConfigError("bad", key="send.chunk_size")) == "[send.chunk_size]: bad"
    assert str(ConfigError("bad", file="p.yaml")) == "p.yaml: bad"
    assert str(ConfigError("bad", file="p.yaml", key="k")) == "p.yaml [k]: bad"


def test_row_error_keeps_column_value_rule_and_hint() -> None:
    err = RowError("too big", column="Score", value="150", rule="<= 100", hint="fix the cell")
    assert (err.column, err.value, err.rule, err.hint) == ("Score", "150", "<= 100", "fix the cell")
    assert str(err) == "too big\n  hint: fix the cell"


def test_api_error_without_method_path_or_status_is_the_bare_message() -> None:
    assert str(ApiError("connection lost")) == "connection lost"
    assert str(ApiError("lost", method="POST", path="/api/x")) == "POST /api/x: lost"
    assert str(ApiError("teapot", status=418)) == "HTTP 418: teapot"


def test_an_auth_error_with_a_hint_keeps_everything_else() -> None:
    err = AuthError("Invalid API key", status=401, method="GET", path="/api/meta/schema")
    hinted = err.with_hint("set RECORDSYNC_API_KEY")
    assert str(hinted) == (
        "GET /api/meta/schema: HTTP 401: Invalid API key\n  hint: set RECORDSYNC_API_KEY"
    )
    assert (hinted.status, hinted.method, hinted.path) == (401, "GET", "/api/meta/schema")

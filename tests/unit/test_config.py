"""Settings: flag > environment > default, and every setting has both spellings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mnemo_server.cli.main import build_parser
from mnemo_server.config import OPTIONS, ConfigError, Settings, resolve


def _settings(argv: list[str], env: dict[str, str]) -> Settings:
    args = build_parser().parse_args(["serve", *argv])
    return resolve(vars(args), env)


def test_defaults() -> None:
    settings = _settings([], {})
    assert settings == Settings()
    assert settings.listen == "127.0.0.1:50051"
    assert settings.effective_database_url == "sqlite:///data/mnemo.db"
    assert (settings.read_connections, settings.write_connections) == (2, 1)
    assert (settings.summary_max_words, settings.recent_default, settings.recent_max) == (60, 3, 50)
    assert settings.grace_period_seconds == 10
    assert settings.max_messages_per_append == 500
    assert settings.effective_migrate_on_start is True


def test_env_over_default_and_flag_over_env() -> None:
    env = {"MNEMO_LISTEN": "127.0.0.1:6000", "MNEMO_RECENT_MAX": "9", "MNEMO_READ_CONNECTIONS": "4"}
    from_env = _settings([], env)
    assert (from_env.listen, from_env.recent_max, from_env.read_connections) == (
        "127.0.0.1:6000",
        9,
        4,
    )
    both = _settings(["--listen", "127.0.0.2:7000", "--recent-max", "12"], env)
    assert (both.listen, both.recent_max, both.read_connections) == ("127.0.0.2:7000", 12, 4)


def test_sqlite_has_one_write_connection() -> None:
    with pytest.raises(ConfigError, match="--write-connections must be 1 on SQLite"):
        _settings(["--write-connections", "2"], {})
    url = "postgresql+psycopg://u:p@db:5432/mnemo"
    assert _settings(["--database-url", url, "--write-connections", "3"], {}).write_connections == 3


def test_data_dir_drives_the_default_database() -> None:
    settings = _settings(["--data-dir", "/tmp/x"], {})
    assert settings.data_dir == Path("/tmp/x")
    assert settings.effective_database_url == "sqlite:////tmp/x/mnemo.db"


def test_postgres_does_not_migrate_on_start_unless_asked() -> None:
    url = "postgresql+psycopg://u:p@db:5432/mnemo"
    assert _settings(["--database-url", url], {}).effective_migrate_on_start is False
    forced = _settings(["--database-url", url], {"MNEMO_MIGRATE_ON_START": "true"})
    assert forced.effective_migrate_on_start is True
    sqlite_off = _settings(["--migrate-on-start", "false"], {})
    assert sqlite_off.effective_migrate_on_start is False


@pytest.mark.parametrize(
    ("argv", "env", "named"),
    [
        (["--read-connections", "0"], {}, "--read-connections"),
        ([], {"MNEMO_WRITE_CONNECTIONS": "many"}, "MNEMO_WRITE_CONNECTIONS"),
        (["--listen", "nowhere"], {}, "--listen"),
        ([], {"MNEMO_MIGRATE_ON_START": "perhaps"}, "MNEMO_MIGRATE_ON_START"),
        (["--recent-default", "9", "--recent-max", "5"], {}, "recent_default"),
        (["--embedder", "word2vec"], {}, "--embedder"),
        ([], {"MNEMO_EMBEDDER": "hashing:lots"}, "MNEMO_EMBEDDER"),
    ],
)
def test_malformed_values_name_their_source(
    argv: list[str], env: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        _settings(argv, env)


def test_every_setting_has_one_flag_and_one_env_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sorted(o.field for o in OPTIONS) == sorted(f.name for f in dataclasses.fields(Settings))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    help_text = capsys.readouterr().out
    for option in OPTIONS:
        assert option.flag in help_text and option.env in help_text


def test_log_level_is_case_insensitive() -> None:
    assert _settings([], {"MNEMO_LOG_LEVEL": "debug"}).log_level == "DEBUG"


def test_embedder_spec_is_checked_at_start_up() -> None:
    # The default embeds with the model a dependency ships (tests/api/test_local_embedder.py).
    assert _settings([], {}).embedder == "local"
    assert _settings(["--embedder", " hashing:64 "], {}).embedder == "hashing:64"
    assert _settings(["--embedder", ""], {}).embedder == "none"
    assert _settings(["--embedder", "onnx:/models/x"], {}).embedder == "onnx:/models/x"

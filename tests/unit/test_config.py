from pathlib import Path

import pytest

from memora.config import load_settings
from memora.errors import ConfigurationError


def test_defaults_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMORA_MAX_AGENT_STEPS", "6")
    settings = load_settings()
    assert settings.data_dir == tmp_path
    assert settings.max_agent_steps == 6


def test_home_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORA_DATA_DIR", raising=False)
    assert "~" not in str(load_settings().data_dir)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORA_RETRIEVAL_LIMIT", "0"),
        ("MEMORA_RETRIEVAL_MIN_SCORE", "1.5"),
        ("MEMORA_MAX_AGENT_STEPS", "many"),
        ("MEMORA_EMBEDDINGS", "word2vec"),
    ],
)
def test_invalid_value_names_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        load_settings()


def test_database_url_must_be_postgres() -> None:
    assert load_settings(database_url="").database_url is None
    url = "postgresql://memora@db:5432/memora"
    assert load_settings(database_url=url).database_url == url
    with pytest.raises(ConfigurationError, match="MEMORA_DATABASE_URL: .*postgresql://"):
        load_settings(database_url="mysql://db/memora")

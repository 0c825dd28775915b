"""The user profile: confirmed current facts, injected as background every turn.

It lives beside the memories: in ``memora.db`` on SQLite, in the shared
database on Postgres (the same statements serve both).
"""

from __future__ import annotations

from memora.models import utcnow
from memora.storage.db import SqlDatabase
from memora.validation import InvalidInput, validate_profile_field, validate_user_id
from memora.write.policy import is_sensitive

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS profile (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, key)
);
"""


def holds_sensitive_data(key: str, value: str) -> bool:
    """Whether the memory policy's secret detectors fire on a profile field.

    The key is read as words too ("wifi_password" names a password), and with the value,
    since a keyword detector needs the kind of secret next to the value it guards.
    """
    words = " ".join(key.replace("_", " ").replace("-", " ").split())
    texts = (key, value, f"{key} {value}", f"{key}: {value}", f"{words} {value}")
    return any(is_sensitive(text) for text in texts)


class UserProfileStore:
    """Key-value profile per user, in the same database as the memories."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        db.ensure_schema("profile", SCHEMA_VERSION, [_SCHEMA.strip().rstrip(";")])

    def get(self, user_id: str) -> dict[str, str]:
        """The whole profile of a user."""
        rows = self.db.query(
            "SELECT key, value FROM profile WHERE user_id = ? ORDER BY key", (user_id,)
        )
        return {row["key"]: row["value"] for row in rows}

    def set(self, user_id: str, key: str, value: str) -> None:
        """Set one profile field.

        Raises:
            InvalidInput: The user id, key or value is empty, too long or not valid UTF-8,
                or the field holds a secret or an identifier the memory policy refuses.
        """
        user_id = validate_user_id(user_id)
        key, value = validate_profile_field(key, value)
        if holds_sensitive_data(key, value):
            # The profile is shown to the model every turn and kept at rest: it may hold
            # nothing a memory may not (the message names no part of the field).
            raise InvalidInput(
                "profile field refused: it holds sensitive data (a password, key, card or "
                "ID number) that Memora does not store"
            )
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO profile VALUES (?, ?, ?, ?) ON CONFLICT(user_id, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (user_id, key, value, utcnow().isoformat()),
            )

    def unset(self, user_id: str, key: str) -> bool:
        """Remove one field; returns whether it existed."""
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM profile WHERE user_id = ? AND key = ?", (user_id, key.strip())
            )
            return cursor.rowcount > 0

    def erase(self, user_id: str) -> int:
        """Remove every field of the user's profile; returns how many there were."""
        with self.db.transaction() as conn:
            return int(conn.execute("DELETE FROM profile WHERE user_id = ?", (user_id,)).rowcount)

    def scrub(self) -> bool:
        """Make deleted fields unreadable from storage (see ``SqlDatabase.reclaim``)."""
        return self.db.reclaim("profile")

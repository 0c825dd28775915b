"""The user profile: confirmed current facts, injected as background every turn.

It lives beside the memories: in ``memora.db`` on SQLite, in the shared
database on Postgres (the same statements serve both). On Postgres the values are
sealed under the user's key (``memora.storage.user_keys``): removing or replacing a
field gives the user a new key, and erasing the user destroys it.
"""

from __future__ import annotations

from memora.judgement import Judgement
from memora.models import MemoryCandidate, RejectionReason, utcnow
from memora.storage.db import SqlDatabase
from memora.storage.user_keys import (
    drop_user_key,
    key_join,
    open_field,
    rotate_user_key,
    seal_field,
    seal_plain_rows,
    user_key,
)
from memora.validation import InvalidInput, validate_profile_field, validate_user_id
from memora.write.policy import check_candidate, is_sensitive

SCHEMA_VERSION = 2
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


PROFILE_SECRET = 0.6
"""Secret-decision probability of a field read as a sentence at which it is refused. Profile
values are short and often numbers that open nothing (a birthday read 0.45, a phone number
0.11, a postcode 0.12), where a wifi password read 0.75, a security answer 0.99 and a garage
code 0.67: chosen on those few fields, tried by hand, not on a labelled set."""


def profile_field_refusal(key: str, value: str, judge: Judgement) -> str | None:
    """Why the trained decisions refuse a profile field, or None: it reads as an instruction
    to the assistant (the profile is shown to the model every turn), or as a way into
    something. Each field is read as the sentence it stands for, "The user's wifi is …"."""
    words = " ".join(key.replace("_", " ").replace("-", " ").split())
    sentence = f"The user's {words} is {value}."
    verdict = check_candidate(MemoryCandidate(content=sentence), judge)
    if verdict is not None and verdict[0] is RejectionReason.INSTRUCTION_LIKE:
        return "it reads as an instruction to the assistant"
    if judge.secret_probability([sentence])[0] >= PROFILE_SECRET:
        return "it holds sensitive data (a password, code or answer) that Memora does not store"
    return None


class UserProfileStore:
    """Key-value profile per user, in the same database as the memories."""

    def __init__(self, db: SqlDatabase) -> None:
        self.db = db
        self.sealed = db.dialect == "postgres"
        """Values sealed under the user's key (Postgres never zeroes what it deletes)."""
        statements: list = [_SCHEMA.strip().rstrip(";")]
        if self.sealed:
            statements.append(lambda conn: seal_plain_rows(conn, "profile"))
        if db.ensure_schema("profile", SCHEMA_VERSION, statements) and self.sealed:
            db.rewrite("profile")  # the plain values' dead tuples leave with the old file

    def get(self, user_id: str) -> dict[str, str]:
        """The whole profile of a user."""
        if not self.sealed:
            rows = self.db.query(
                "SELECT key, value FROM profile WHERE user_id = ? ORDER BY key", (user_id,)
            )
            return {row["key"]: row["value"] for row in rows}
        rows = self.db.query(
            "SELECT profile.key, profile.value, user_key.key AS sealing_key FROM profile"
            f" {key_join('profile')} WHERE profile.user_id = ? ORDER BY profile.key",
            (user_id,),
        )
        return {
            row["key"]: str(open_field(row["value"], _key_of(row["sealing_key"]))) for row in rows
        }

    def set(self, user_id: str, key: str, value: str, judge: Judgement | None = None) -> None:
        """Set one profile field.

        Raises:
            InvalidInput: The user id, key or value is empty, too long or not valid UTF-8,
                or the field holds a secret or an identifier the memory policy refuses, or
                what the trained decisions (``judge``) refuse in it.
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
        refused = profile_field_refusal(key, value, judge) if judge is not None else None
        if refused is not None:
            raise InvalidInput(f"profile field refused: {refused}")
        with self.db.transaction() as conn:
            stored = value
            if self.sealed:
                user_key(conn, user_id, exclusive=True)
                replaced = conn.execute(
                    "DELETE FROM profile WHERE user_id = ? AND key = ?", (user_id, key)
                ).rowcount
                if replaced:  # the old value's bytes stay in free space: they lose their key
                    rotate_user_key(conn, user_id)
                stored = str(seal_field(value, user_key(conn, user_id)))
            conn.execute(
                "INSERT INTO profile VALUES (?, ?, ?, ?) ON CONFLICT(user_id, key)"
                " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (user_id, key, stored, utcnow().isoformat()),
            )

    def unset(self, user_id: str, key: str) -> bool:
        """Remove one field; returns whether it existed.

        On Postgres the user gets a new key (the old value's bytes lose theirs once the
        key partition is rewritten: ``Memora.unset_profile`` runs the scrub).
        """
        with self.db.transaction() as conn:
            if self.sealed:
                user_key(conn, user_id, exclusive=True)
            cursor = conn.execute(
                "DELETE FROM profile WHERE user_id = ? AND key = ?", (user_id, key.strip())
            )
            if cursor.rowcount > 0 and self.sealed:
                rotate_user_key(conn, user_id)
            return cursor.rowcount > 0

    def erase(self, user_id: str) -> int:
        """Remove every field of the user's profile; returns how many there were."""
        with self.db.transaction() as conn:
            if self.sealed:
                drop_user_key(conn, user_id)
            return int(conn.execute("DELETE FROM profile WHERE user_id = ?", (user_id,)).rowcount)

    def scrub(self) -> bool:
        """Make deleted fields unreadable from storage (see ``SqlDatabase.reclaim``)."""
        return self.db.reclaim("profile")


def _key_of(value: object) -> bytes | None:
    return bytes(value) if isinstance(value, bytes | bytearray | memoryview) else None

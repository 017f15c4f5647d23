"""What gyms are written with: the reply rules every task gets (:func:`guard_replies`)."""

from arena.authoring.reply_rules import guard_replies

__all__ = ["guard_replies"]

"""The CRM's knobs: the kit's task knobs plus the world's messiness and the discount threshold."""

from __future__ import annotations

from pydantic import Field

from arena.authoring import GymKnobs

__all__ = ["CrmKnobs"]


class CrmKnobs(GymKnobs):
    """The kit's task knobs plus the CRM world's messiness and its discount threshold."""

    near_duplicate_rate: float = Field(default=0.15, ge=0.0, le=0.5, description="Share of accounts and contacts "
                                       "generated with a near-duplicate twin: the same name (an account's maybe "
                                       "with a legal suffix) in another city or at another account (0-0.5, "
                                       "default 0.15).")
    stale_rate: float = Field(default=0.1, ge=0.0, le=0.5, description="Share of account, opportunity and quote "
                              "summaries in the search index whose cached stage or status is out of date (0-0.5, "
                              "default 0.1).")
    legacy_format_rate: float = Field(default=0.5, ge=0.0, le=1.0, description="Share of rows created before 2023 "
                                      "(imported from the legacy CRM) whose phone numbers, amounts and dates keep "
                                      "the old formats: (415) 555-0123, $12,500.00 or 12,500.00 EUR, MM/DD/YYYY "
                                      "(0-1, default 0.5).")
    discount_threshold: float = Field(default=15.0, ge=5.0, le=40.0, description="Quote discount (percent) above "
                                      "which a manager's discount approval is needed before the quote is sent "
                                      "(5-40, default 15).")

"""Kept for imports written before `agentport.policies`: the retry policy lives there."""

from __future__ import annotations

from .policies import RetryingAdapter, RetryPolicy, with_retry

__all__ = ["RetryPolicy", "RetryingAdapter", "with_retry"]

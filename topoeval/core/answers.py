"""Answer matching for text-channel tasks: normalised exact match and token F1 (SQuAD style)."""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ANSWER_PREFIX = re.compile(r"(?:final answer|answer)\s*[:：]\s*", re.IGNORECASE)


def normalize_answer(text: str | None) -> str:
    """Lower-case, drop punctuation and articles, fold white space."""
    if not text:
        return ""
    text = text.lower().translate(_NO_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def extract_answer(text: str | None) -> str:
    """The answer part of a final message: what follows the last 'Answer:' if present, else all of it."""
    if not text:
        return ""
    parts = _ANSWER_PREFIX.split(text)
    return parts[-1].strip()


def exact_match(prediction: str | None, golds: list[str]) -> float:
    """1.0 when the normalised extracted prediction equals a normalised gold answer."""
    pred = normalize_answer(extract_answer(prediction))
    return float(bool(pred) and any(pred == normalize_answer(g) for g in golds))


def token_f1(prediction: str | None, golds: list[str]) -> float:
    """Best token-level F1 between the extracted prediction and any gold answer."""
    pred_tokens = normalize_answer(extract_answer(prediction)).split()
    best = 0.0
    for gold in golds:
        gold_tokens = normalize_answer(gold).split()
        common = Counter(pred_tokens) & Counter(gold_tokens)
        overlap = sum(common.values())
        if not pred_tokens or not gold_tokens or overlap == 0:
            continue
        precision, recall = overlap / len(pred_tokens), overlap / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best

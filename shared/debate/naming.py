"""The seed's naming conventions and the document ids, one place."""

from __future__ import annotations

import re


def slug(category: str) -> str:
    """``company news`` → ``CompanyNews``: a category as a name part and document id part."""
    words = re.findall(r"[A-Za-z0-9]+", category)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Uncategorized"


def leaf_agent(debate: str, category: str, i: int) -> str:
    return f"{debate}_{slug(category)}_Agent{i}"


def category_head(debate: str, category: str, part: int = 0, parts: int = 1) -> str:
    """The seed's ``{DEBATE}_{CATEGORY}_HeadAgent``; a category split into several clusters has
    one head per part: ``{DEBATE}_{CATEGORY}_Part{p}_HeadAgent``."""
    split = f"_Part{part}" if parts > 1 else ""
    return f"{debate}_{slug(category)}{split}_HeadAgent"


def cluster_head(debate: str, cluster_index: int, layer: int) -> str:
    return f"{debate}_Cluster{cluster_index}_Layer{layer}_HeadAgent"


def static_agent(debate: str, i: int) -> str:
    return f"{debate}_Static{i}"


def single_agent(debate: str, i: int) -> str:
    return f"{debate}_Single_Agent{i}"


def layer_id(layer: int) -> str:
    return f"L{layer}"


def cluster_id(layer: int, index: int) -> str:
    return f"L{layer}-C{index}"


def round_id(cluster: str, index: int, head: bool = False) -> str:
    return f"{cluster}-H" if head else f"{cluster}-R{index}"


def statement_id(round_: str, agent: str) -> str:
    return f"{round_}-{agent}"

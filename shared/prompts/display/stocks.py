"""Stock info and asset allocation displays (DL's stockinfo_stage.utils.ts and
asset_allocation_stage.utils.ts), from the stock dicts of the stage documents."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from shared.models import AssetAllocationStage, StockInfoStage
from shared.prompts.display.view import StageView, js_number

# (symbol, symbol after the amount, thousands separator) as Intl.NumberFormat writes them in the
# locales DL picks per currency.
_CURRENCIES = {
    "USD": ("$", False, ","),
    "GBP": ("£", False, ","),
    "CAD": ("CA$", False, ","),
    "AUD": ("A$", False, ","),
    "JPY": ("￥", False, ","),
    "CNY": ("¥", False, ","),
    "EUR": ("€", True, "."),
    "INR": ("₹", False, ","),
}


def _round(value: float, places: int = 0) -> Decimal:
    """Half away from zero on the exact value, as JavaScript's toFixed and Intl do."""
    return Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _group(digits: str, sep: str, indian: bool) -> str:
    if not indian or len(digits) <= 3:
        return f"{int(digits):,}".replace(",", sep)
    head, tail = digits[:-3], digits[-3:]
    pairs = [head[max(0, i - 2) : i] for i in range(len(head), 0, -2)][::-1]
    return sep.join([*pairs, tail])


def format_currency(amount: float, currency: str = "USD") -> str:
    """DL's formatCurrency(amount, currency, {decimals: 0})."""
    rounded = _round(amount)
    sign = "-" if rounded < 0 else ""
    digits = str(abs(int(rounded)))
    if currency not in _CURRENCIES:
        return f"{currency} {sign}{int(digits):,}"
    symbol, after, sep = _CURRENCIES[currency]
    number = _group(digits, sep, indian=currency == "INR")
    return f"{sign}{number}\u00a0{symbol}" if after else f"{sign}{symbol}{number}"


def _closes(stock: dict[str, Any]) -> list[tuple[str, float]]:
    data = stock.get("parsedData") or []
    points = [(str(p["date"]), float(p["close"])) for p in data if isinstance(p, dict)]
    if points or not stock.get("csvData"):
        return points
    for line in str(stock["csvData"]).strip().splitlines()[1:]:
        date, _, close = line.partition(",")
        try:
            points.append((date.strip(), float(close)))
        except ValueError:
            continue
    return sorted(points)


def _year_cards(stock: dict[str, Any], stage: StockInfoStage) -> list[tuple[str, str, str]]:
    extra = stage.model_extra or {}
    best_on, worst_on = extra.get("showBestYearCard"), extra.get("showWorstYearCard")
    if not (best_on or worst_on):
        return []
    years: dict[int, list[float]] = {}
    for date, close in _closes(stock):
        years.setdefault(int(date.split("-")[0]), []).append(close)
    perf = []
    for year, closes in years.items():
        pct = (closes[-1] - closes[0]) / closes[0] * 100
        perf.append((year, pct / 100 * stage.initial_investment, pct))
    if not perf:
        return []
    cards = []
    for enabled, title, pick in (
        (best_on, "Best Year Performance", max),
        (worst_on, "Worst Year Performance", min),
    ):
        if enabled:
            year, dollars, pct = pick(perf, key=lambda p: p[1])
            value = format_currency(dollars, stage.currency)
            cards.append((title, value, f"{_round(pct, 1)}% ({year})"))
    return cards


def _visible(stage: StockInfoStage) -> list[dict[str, Any]]:
    visible = (stage.model_extra or {}).get("visibleStockIds")
    if not visible:
        return list(stage.stocks)
    return [s for s in stage.stocks if s.get("id") in visible]


def stock_info(stage: StockInfoStage, view: StageView) -> str:
    blocks = []
    for stock in _visible(stage):
        lines = [
            f"## Stock Information: {stock.get('name', '')}",
            str(stock.get("description", "")),
        ]
        cards = _year_cards(stock, stage) + [
            (c.get("title", ""), c.get("value", ""), c.get("subtext", ""))
            for c in stock.get("customCards") or []
            if isinstance(c, dict) and c.get("enabled", True)
        ]
        if cards:
            lines.append("Key Information:")
            for title, value, subtext in cards:
                lines.append(f"- {title}: {value}")
                if subtext:
                    lines.append(f"  {subtext}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _stock_name(stage: AssetAllocationStage, view: StageView, which: str) -> str:
    config = stage.stock_config
    stock = config.get(f"stock{which}")
    if isinstance(stock, dict) and stock.get("name"):
        return str(stock["name"])
    source = view.ctx.stages.get(str(config.get("stockInfoStageId") or ""))
    wanted = config.get(f"stock{which}Id")
    if isinstance(source, StockInfoStage) and wanted:
        for candidate in source.stocks:
            if candidate.get("id") == wanted:
                return str(candidate.get("name") or wanted)
    return f"Stock {which}"


def asset_allocation(stage: AssetAllocationStage, view: StageView) -> str:
    a, b = _stock_name(stage, view, "A"), _stock_name(stage, view, "B")
    summary = f"## Asset Allocation: User has $1,000 to allocate between two stocks:\n* {a}\n* {b}"
    answered = [(p, x) for p, x in view.answers(stage.id) if isinstance(x.get("allocation"), dict)]
    if not answered:
        return summary
    lines = []
    for participant, answer in answered:
        alloc = answer["allocation"]
        sa, sb = alloc.get("stockA") or {}, alloc.get("stockB") or {}
        prefix = ""
        if view.scaffolding or len(answered) > 1:
            prefix = f"Participant {view.answer_name(participant, stage.id)}:\n"
        lines.append(
            f"{prefix}{sa.get('name', a)}: {js_number(sa.get('percentage'))}%, "
            f"{sb.get('name', b)}: {js_number(sb.get('percentage'))}%"
        )
    return f"{summary}\n## Current Asset Allocation:\n" + "\n".join(lines)

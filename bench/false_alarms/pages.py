"""The answers the stand-in writes for the false-alarm scenarios.

`PASSPORT` is a healthy answer of the kind issue 39 saw cut: a passport's data page as a
Markdown transcription, ending in its machine-readable zone, whose fill character `<` runs 19
times on the first line (the ICAO 9303 specimen, Anna Maria Eriksson of Utopia, printed in Doc
9303 Part 4 for exactly this use). The detector as issue 39 found it called `char_run` on such a
line from 12 copies of a symbol; the bench sets it so (char_run_min and mrz_fill_run_min 12),
since the default now waits for 128 `<`. `LEDGER` is a page that loops for real on a ledger row:
the same row from the same place whatever the decoding, as a model stuck on a page does.
`drifting_loop` is a loop whose place and row change with the temperature, as a sampled retry
usually moves a loop. `ended_loop` is the ledger's loop that ends: the same row `ENDED_COPIES`
times from the same place, then EOS before the cap (a loop that ends is still degeneration).
`loop_once` loops on the first read only and reads the ledger healthily at any other
temperature: what a loop that does not come back costs, beside the sticky one.
"""

from __future__ import annotations

from typing import Any

from bench.vllm_standin.scripted import ScriptedAnswer

PASSPORT = """# PASSPORT / PASSEPORT

**UTOPIA**

| Field | Value |
|---|---|
| Type / Type | P |
| Code of issuing State / Code de l'État émetteur | UTO |
| Passport No. / N° de passeport | L898902C3 |
| Surname / Nom | ERIKSSON |
| Given names / Prénoms | ANNA MARIA |
| Nationality / Nationalité | UTOPIAN |
| Date of birth / Date de naissance | 12 AUG/AOÛT 74 |
| Personal No. / N° personnel | ZE 184226 B |
| Sex / Sexe | F |
| Place of birth / Lieu de naissance | ZENITH |
| Date of issue / Date de délivrance | 16 APR/AVR 07 |
| Authority / Autorité | PASSPORT OFFICE |
| Date of expiry / Date d'expiration | 15 APR/AVR 12 |
| Holder's signature / Signature du titulaire | *Anna Maria Eriksson* |

The bearer of this passport is a citizen of Utopia. The Minister of Foreign Affairs of Utopia
requests all whom it may concern to allow the bearer to pass freely and without hindrance and to
afford the bearer such assistance and protection as may be necessary.

Le Ministre des Affaires étrangères d'Utopie prie les autorités civiles et militaires de laisser
passer librement le titulaire du présent passeport et de lui prêter aide et protection.

Observations: none. This passport contains 32 pages. It remains the property of the Government
of Utopia and must be surrendered on request.

```
P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<
L898902C36UTO7408122F1204159ZE184226B<<<<<10
```
"""

_LEDGER_HEAD = """# Account statement

Statement period: 1 March 2024 to 31 March 2024. Account holder: Northwind Traders Ltd.

| Date | Description | Amount |
|---|---|---|
| 2024-03-01 | Opening balance | 4,210.00 |
"""
LEDGER_ROW = "| 2024-03-02 | Payment received, invoice 1187 | 120.00 |\n"
LEDGER = ScriptedAnswer(_LEDGER_HEAD, loop=LEDGER_ROW)
ENDED_COPIES = 60
LEDGER_ENDED = ScriptedAnswer(_LEDGER_HEAD, loop=LEDGER_ROW, copies=ENDED_COPIES)
# The ledger read healthily: the row once, then the month's other rows.
_MONTH = (
    "Office supplies, Harbour Stationers",
    "Transfer to savings",
    "Direct debit, electricity",
    "Refund, order 5521",
    "Salary run, March",
    "Courier, Eastline Logistics",
    "Bank charges",
    "Software licence renewal",
    "Interest earned",
    "Closing balance",
)
LEDGER_HEALTHY = (
    _LEDGER_HEAD
    + LEDGER_ROW
    + "".join(
        f"| 2024-03-{day:02d} | {what} | {day * 37 % 400}.{day * 7 % 100:02d} |\n"
        for day, what in enumerate(_MONTH, start=3)
    )
)


def healthy(_body: dict[str, Any]) -> ScriptedAnswer:
    """The passport page, written the same way whatever the decoding (a healthy page)."""
    return ScriptedAnswer(PASSPORT)


def same_loop(_body: dict[str, Any]) -> ScriptedAnswer:
    """The ledger page looping on one row from the same place whatever the decoding."""
    return LEDGER


def drifting_loop(body: dict[str, Any]) -> ScriptedAnswer:
    """A loop whose place and row move with the temperature (a sampled retry moves it)."""
    temperature = float(body.get("temperature") or 0.0)
    rows = round(temperature * 10)  # rows written before the loop: 1 at 0.1, 2 at 0.2, ...
    head = _LEDGER_HEAD + "".join(
        f"| 2024-03-{day:02d} | Card payment, terminal {day * 7} | {day * 13}.50 |\n"
        for day in range(3, 3 + rows)
    )
    return ScriptedAnswer(
        head, loop=f"| 2024-03-{10 + rows:02d} | Transfer to savings | {rows}00.00 |\n"
    )


def ended_loop(_body: dict[str, Any]) -> ScriptedAnswer:
    """The ledger row `ENDED_COPIES` times from the same place, then the end of the answer."""
    return LEDGER_ENDED


def loop_once(body: dict[str, Any]) -> ScriptedAnswer:
    """The ledger looping on the greedy first read, read healthily at a retry's temperature;
    a retry that asks it to continue its own last turn (vLLM's continue_final_message) gets
    the rest of the healthy ledger after that text, as a model continuing it would write."""
    if body.get("continue_final_message"):
        kept = str(body["messages"][-1]["content"])
        rest = LEDGER_HEALTHY[len(kept) :] if LEDGER_HEALTHY.startswith(kept) else LEDGER_HEALTHY
        return ScriptedAnswer(rest)
    if float(body.get("temperature") or 0.0) == 0.0:
        return LEDGER
    return ScriptedAnswer(LEDGER_HEALTHY)

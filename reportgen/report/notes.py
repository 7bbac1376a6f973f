"""Error-correction notes: claims from the source articles checked with the estimator's own numbers.

The notes are data (templates/notes.yaml): each quotes its claim verbatim with the article and section
it stands in, gives a verdict, names the scenarios it needs (input mappings, validated like a preset's),
defines its figures as expressions over those scenarios' terms (`serve.weights + serve.kv_cache`,
parsed by formulas.parse_expression) and explains itself in English and Chinese with {figure}
placeholders. One builder turns every entry into a Note: the same expressions give the numbers here
(compiled like the term table), live formulas in the workbook and the figures of the report. No
result is typed in as prose.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..model.catalog import data_dir, load_gpus, load_models
from ..errors import InputError, unknown_name
from ..model.estimate import Estimator, RlhfScenario, make_scenario
from ..model.formulas import Expr, ExpressionError, Var, compile_terms, parse_expression
from ..model.inputs import INPUT_NAMES, RLHF_INPUT_BY_NAME, Scenario
from ..model.terms import TERM_BY_NAME, Term

NOTES_FILE = data_dir("templates") / "notes.yaml"
# The scale, worst first: the claim is false; true in substance but its numbers are off; true only under
# conditions it does not state; true as stated.
VERDICTS = ("wrong", "imprecise", "incomplete", "right")
FIGURE_UNITS = ("bytes", "count", "number", "ratio", "percent", "gpus", "seconds")


@dataclass(frozen=True)
class Quote:
    article: str  # key of ARTICLES
    section: str  # the heading the quoted line stands under, as the article prints it
    text: str  # verbatim fragment of one line


@dataclass(frozen=True)
class NoteFigure:
    key: str  # unique within the note
    label_en: str
    label_zh: str
    unit: str  # one of FIGURE_UNITS; "percent" is a fraction (0.875 reads 87.5 %), "number" a plain decimal
    expr: Expr  # over Vars named "<scenario key>.<term name>"
    value: float


@dataclass(frozen=True)
class Note:
    id: str  # "N1" …
    article: str  # where the claim stands, for readers: title and section(s), in English
    claim_zh: str  # the quoted fragments joined by " … "
    claim_en: str
    setting_en: str
    setting_zh: str
    verdict: str  # one of VERDICTS
    explanation_en: str  # references figures as {key} (formatted by the writer)
    explanation_zh: str
    source: str  # the literature the correction rests on, in English
    scenarios: Mapping[str, Scenario]  # key -> scenario whose terms the figures read
    figures: tuple[NoteFigure, ...]
    scenario_values: Mapping[str, Mapping[str, float]]  # key -> every term of that scenario
    article_zh: str = ""
    source_zh: str = ""
    error: str = ""  # key of the figure that states the size of the error
    quotes: tuple[Quote, ...] = ()


# ---------------------------------------------------------------------------------------------
# Reading the data file

_TOP_KEYS = {"articles", "generic_model", "derived", "bases", "notes"}
_NOTE_KEYS = {"id", "verdict", "error", "quotes", "claim_en", "setting_en", "setting_zh", "scenarios", "figures",
              "explanation_en", "explanation_zh", "source_en", "source_zh"}
_FIGURE_KEYS = {"unit", "expr", "en", "zh"}
PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.]+)\}")


def _mapping(raw: Any, *, source: str, key_path: str) -> Mapping:
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a mapping, got {raw!r}", source=source, key_path=key_path or None)
    return raw


def _keys(raw: Any, allowed: set[str], *, source: str, key_path: str, required: bool = True) -> Mapping:
    """raw, a mapping whose keys are all allowed (and, if required, all present)."""
    for key in _mapping(raw, source=source, key_path=key_path):
        if key not in allowed:
            raise unknown_name("key", key, allowed, source=source, key_path=f"{key_path}.{key}".lstrip("."))
    missing = sorted(allowed - set(raw)) if required else []
    if missing:
        raise InputError(f"missing key {missing[0]!r}", source=source, key_path=key_path or None)
    return raw


@lru_cache(maxsize=4)
def load_catalogue(path: Path = NOTES_FILE) -> Mapping[str, Any]:
    """The notes file, its top level checked (each note is checked as it is built)."""
    # the bundled file, trusted: libyaml's parser where PyYAML has it (0.03 s, against 0.23 s in Python)
    raw = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return _keys(raw, _TOP_KEYS, source=path.name, key_path="")


ARTICLES: Mapping[str, Mapping[str, Any]] = load_catalogue()["articles"]


# ---------------------------------------------------------------------------------------------
# Building

def build_notes(estimator: Estimator, catalogue: Mapping[str, Any] | None = None) -> tuple[Note, ...]:
    """Every note of the catalogue, computed with this estimator (its catalogs and assumptions)."""
    catalogue = catalogue or load_catalogue()
    return tuple(build_note(spec, estimator, catalogue, key_path=f"notes[{i}]")
                 for i, spec in enumerate(catalogue["notes"]))


def build_note(spec: Mapping[str, Any], estimator: Estimator, catalogue: Mapping[str, Any] | None = None, *,
               key_path: str = "note") -> Note:
    """One note from its entry in the catalogue."""
    catalogue = catalogue or load_catalogue()
    source = NOTES_FILE.name
    spec = _keys(spec, _NOTE_KEYS, source=source, key_path=key_path)
    note_id = spec["id"]
    if spec["verdict"] not in VERDICTS:
        raise unknown_name("verdict", spec["verdict"], VERDICTS, source=source, key_path=f"{key_path}.verdict")
    quotes = _quotes(spec["quotes"], catalogue["articles"], source=source, key_path=f"{key_path}.quotes")
    scenarios = _scenarios(note_id, spec["scenarios"], catalogue["bases"], estimator, source=source,
                           key_path=f"{key_path}.scenarios")
    values = {k: estimator.estimate(s).values for k, s in scenarios.items()}

    def fill(text: str, lang: str, where: str) -> str:
        return _fill(text, scenarios, estimator.assumptions, lang, source=source, key_path=where)

    figures = _figures(spec["figures"], scenarios, values, estimator, catalogue["derived"], fill, source=source,
                       key_path=f"{key_path}.figures")
    keys = {f.key for f in figures}
    if spec["error"] not in keys:
        raise unknown_name("figure", spec["error"], keys, source=source, key_path=f"{key_path}.error")
    for lang in ("en", "zh"):
        missing = set(PLACEHOLDER.findall(spec[f"explanation_{lang}"])) - keys
        if missing:
            raise unknown_name("figure", sorted(missing)[0], keys, source=source,
                               key_path=f"{key_path}.explanation_{lang}")
    generic = catalogue["generic_model"]
    uses_generic = any(s.model == generic["name"] for s in scenarios.values())

    def setting(lang: str) -> str:
        text = fill(spec[f"setting_{lang}"], lang, f"{key_path}.setting_{lang}")
        if not uses_generic:
            return text
        params = {name: _format_input(estimator.tables["Models"][name]["total_params"], lang)
                  for name in (generic["name"], generic["summary_model"])}
        return text + generic[lang].format(generic=generic["name"], generic_params=params[generic["name"]],
                                           summary=generic["summary_model"],
                                           summary_params=params[generic["summary_model"]])

    return Note(id=note_id, article=_citation(quotes, catalogue["articles"], "en"),
                claim_zh=" … ".join(q.text for q in quotes), claim_en=spec["claim_en"],
                setting_en=setting("en"), setting_zh=setting("zh"), verdict=spec["verdict"],
                explanation_en=spec["explanation_en"], explanation_zh=spec["explanation_zh"],
                source=spec["source_en"], scenarios=scenarios, figures=figures, scenario_values=values,
                article_zh=_citation(quotes, catalogue["articles"], "zh"), source_zh=spec["source_zh"],
                error=spec["error"], quotes=quotes)


def claim_fragments(notes: tuple[Note, ...] | None = None) -> list[Quote]:
    """Every verbatim fragment the notes quote, with its article and section."""
    if notes is None:
        notes = build_notes(Estimator(load_models(), load_gpus()))
    return [q for n in notes for q in n.quotes]


def _quotes(raw: Any, articles: Mapping[str, Any], *, source: str, key_path: str) -> tuple[Quote, ...]:
    out = []
    for i, q in enumerate(raw):
        q = _keys(q, {"article", "section", "text"}, source=source, key_path=f"{key_path}[{i}]")
        if q["article"] not in articles:
            raise unknown_name("article", q["article"], articles, source=source, key_path=f"{key_path}[{i}].article")
        sections = articles[q["article"]]["sections"]
        if q["section"] not in sections:
            raise unknown_name("section", q["section"], sections, source=source, key_path=f"{key_path}[{i}].section")
        out.append(Quote(q["article"], q["section"], q["text"]))
    return tuple(out)


_COUNT_ZH = "一两三四五六七八九"


def _citation(quotes: tuple[Quote, ...], articles: Mapping[str, Any], lang: str) -> str:
    """'“Title”, sections “A” and “B”' / '《标题》“A”“B”两节', one per article, in order of quotation."""
    by_article: dict[str, list[str]] = {}
    for q in quotes:
        names = by_article.setdefault(q.article, [])
        name = articles[q.article]["sections"][q.section][lang]
        if name not in names:
            names.append(name)
    out = []
    for article, names in by_article.items():
        title = articles[article][f"title_{lang}"]
        if lang == "zh":
            out.append(f"《{title}》" + "".join(f"“{n}”" for n in names) + f"{_COUNT_ZH[len(names) - 1]}节")
        else:
            quoted = [f"“{n}”" for n in names]
            listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
            out.append(f"“{title}”, section{'s' if len(names) > 1 else ''} {listed}")
    return "；".join(out) if lang == "zh" else "; ".join(out)


def _scenarios(note_id: str, raw: Any, bases: Mapping[str, Any], estimator: Estimator, *, source: str,
               key_path: str) -> dict[str, Scenario]:
    """Each entry's inputs (over its `base`), validated by the input table; an RLHF entry becomes one
    scenario per role, keyed '<entry>_<role>'."""
    out: dict[str, Scenario] = {}
    for key, entry in _mapping(raw, source=source, key_path=key_path).items():
        where = f"{key_path}.{key}"
        values = dict(_keys(entry, set(INPUT_NAMES) | set(RLHF_INPUT_BY_NAME) | {"base"}, source=source,
                            key_path=where, required=False))
        if "base" in values:
            base = values.pop("base")
            if base not in bases:
                raise unknown_name("base", base, bases, source=source, key_path=f"{where}.base")
            values = {**bases[base], **values}
        workload = values.pop("workload", "inference")
        rlhf = {k: values.pop(k) for k in list(values) if k in RLHF_INPUT_BY_NAME}
        scenario, reason = make_scenario(values, workload=workload, rlhf=rlhf, estimator=estimator, source=source,
                                         key_path=lambda n: f"{where}.{n}")
        if reason:
            raise InputError(f"cannot run: {reason.text()}", source=source, key_path=where)
        roles = scenario.roles if isinstance(scenario, RlhfScenario) else (("", scenario),)
        for role, s in roles:
            name = f"{key}_{role}" if role else key
            out[name] = s.with_inputs(name=f"{note_id} · {name}")
    return out


def _figures(raw: Any, scenarios: Mapping[str, Scenario], results: Mapping[str, Mapping[str, float]],
             estimator: Estimator, derived: Mapping[str, str], fill, *, source: str,
             key_path: str) -> tuple[NoteFigure, ...]:
    """Each figure's expression parsed over the scenarios' terms and evaluated on their values; its
    labels may name the scenarios' inputs as a setting does."""
    lookups = {column: table for table, rows in estimator.tables.items() for column in next(iter(rows.values()))}

    def resolve(where: str):
        def name(n: str) -> Expr | None:
            key, _, term = n.partition(".")
            if key not in scenarios:
                raise InputError(f"{n!r}: no scenario {key!r} (scenarios: {', '.join(scenarios)})", source=source,
                                 key_path=where)
            if term in derived:  # a sum the articles name, over the same scenario's terms
                return parse_expression(derived[term], resolve=lambda t: Var(f"{key}.{t}"))
            if term not in TERM_BY_NAME:
                raise unknown_name("term", term, TERM_BY_NAME, source=source, key_path=where)
            return None
        return name

    figures: list[tuple[str, dict[str, str]]] = []
    terms = []
    for key, fig in _mapping(raw, source=source, key_path=key_path).items():
        where = f"{key_path}.{key}"
        fig = _keys(fig, _FIGURE_KEYS, source=source, key_path=where)
        if fig["unit"] not in FIGURE_UNITS:
            raise unknown_name("unit", fig["unit"], FIGURE_UNITS, source=source, key_path=f"{where}.unit")
        try:
            expr = parse_expression(str(fig["expr"]), lookups=lookups, resolve=resolve(f"{where}.expr"))
        except ExpressionError as err:
            raise InputError(str(err), source=source, key_path=f"{where}.expr") from None
        labels = {lang: fill(fig[lang], lang, f"{where}.{lang}") for lang in ("en", "zh")}
        figures.append((key, labels))
        terms.append(Term(key, labels["en"], fig["unit"], expr))
    fn = compile_terms(terms, lambda n: "R[{!r}][{!r}]".format(*n.split(".", 1)), "_note")
    values = fn({}, estimator.assumptions, estimator.tables, results)
    return tuple(NoteFigure(key, labels["en"], labels["zh"], t.unit, t.expr, v)
                 for (key, labels), t, v in zip(figures, terms, values))


def _format_input(value: Any, lang: str) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):  # Chinese text groups digits only in long numbers ("4096 token", "6,738,415,616")
        return f"{value:,}" if lang == "en" or value >= 100_000 else str(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _fill(text: str, scenarios: Mapping[str, Scenario], assumptions: Mapping[str, float], lang: str, *,
          source: str, key_path: str) -> str:
    """A setting with its {scenario.input} and {assumption} placeholders filled in: settings name
    inputs, never results, and take them from the scenarios so the two cannot disagree."""
    def value(m: re.Match) -> str:
        name = m.group(1)
        key, _, field = name.partition(".")
        if field and key in scenarios and field in INPUT_NAMES:
            return _format_input(getattr(scenarios[key], field), lang)
        if not field and name in assumptions:
            return _format_input(assumptions[name], lang)
        raise InputError(f"{{{name}}} is neither <scenario>.<input> nor an assumption", source=source,
                         key_path=key_path)
    return PLACEHOLDER.sub(value, text)

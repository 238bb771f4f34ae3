"""Program search where sampling found nothing: expert iteration's search step.

The update can only reinforce programs the policy samples. For the questions whose
sampled programs all fall short (best reward below `search.below`), those programs seed
a local search (`policies.mutation`: genetic-programming edits over the API the prompt
documents, with the question as a terminal).

A program checked on one question proves little: with a yes/no answer, half of all
programs are right by chance (a first version that kept every mutant beating its
samples lowered held-out accuracy from 36.7% to 24.2% after one update; bench/README,
"Program search"). So search keeps *general* programs only: a mutant that reads its
question is lifted to a form (the question becomes a slot), each form is run on every
searched question of the batch, and a form is kept when it beats the sampled programs on
at least `search.min_share` of them. On each question the best such form (the most wins,
then the shortest) that beats the samples there gives one rollout (`searched=True`); the prompt is taught them, as a refined
program's is, and the objective weighs them like any rollout of their question.

With `search.teach_solved`, the kept forms are also taught on the questions a sample
solved, where they do as well as the best sample: a yes/no question is often solved by
chance (a program asking a fixed string), and the update would otherwise reinforce the
lucky program there and never the general one.

With `search.library`, the forms kept in an iteration are remembered (the newest first, at
most `library` of them) and tried again on later iterations' questions, as expert iteration's
apprentice and DreamCoder's library keep what search found: a remembered form is taught
wherever it beats the samples, without winning on `min_share` again. Late in a run the
questions still searched are mostly ones the remembered forms fail too, so without it
search keeps nothing, and `teach_solved` has nothing to teach, while the policy still
writes a lucky fixed-string program on some of the questions a form would solve.

With `search.teach_probe`, a composed form proven on the probe is also taught on up to that
many of the probe questions it got right (new rows of the batch, with the iteration's prompt;
not the iteration's own questions). A template's questions are a few of each batch, while
the one-line program the policy prefers is right by chance on half of them: taught on three
questions an iteration, the composed forms did not move the greedy policy in 6 iterations
(bench/README, section "Composed programs").

With `search.rehearse`, each iteration also teaches the newest proven phrase form the library
remembers for each template on that many training questions of its template, drawn afresh
(not the iteration's own), where it is right. Taught only in the iteration that proved it, a
composed form was written by the greedy policy after 4 updates and dropped by the 7th, as
other templates' lessons displaced it (bench/README, section "A third composed call").

No label enters the search itself: forms are chosen by the run's own reward, so a
label-free reward stays label-free. The draw depends on the questions, not on the rank
holding them.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from policies.compose import composed, marker, template
from policies.mutation import api_methods, literal, mutants
from rewards.combine import execute_and_score
from train.rollout import Rollout, rescored, written

SLOT = "__vprl_question__"
WHEN = "# when: "  # a phrase form's first line: the question template it applies to
PROBE_BAR = 0.9  # share of its probe a composed form must get right: a fair yes/no guess passes 16 with p < 0.03%
PROBE_MIN = 8  # probe questions a template needs before a composed form on it can be proven
PROBE_ROUND = 4  # probe questions per round; a form that can no longer reach the bar stops
PROBE_CANDIDATES = 256  # composed forms probed per iteration and prompt family (the commonest)


def _quoted(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((literal(text), json.dumps(text, ensure_ascii=False))))


def lift(program: str, question: str) -> str | None:
    """The program's form: the question, where it is a string of the program, made a slot."""
    for quoted in _quoted(question):
        if quoted in program:
            return program.replace(quoted, SLOT)
    return None


def lift_phrases(program: str, question: str, require_phrase: bool = True) -> str | None:
    """The program's phrase form: its strings that are phrases of the question made slots,
    headed by the question's template (`policies.compose.template`), so it applies to the
    questions that ask the same thing of other objects. None when it reads no phrase, unless
    not `require_phrase` (a constant or the whole question is a form of its template too).

    One pass, longest literal first: a phrase's literal inside the question's own literal
    is not replaced there (`"red"` within `'Is the word "red" on the sign?'`)."""
    shape, words = template(question)
    slots = {quoted: SLOT for quoted in _quoted(question)}
    slots.update({quoted: marker(k) for k, word in enumerate(words) for quoted in _quoted(word)})
    pattern = "|".join(re.escape(q) for q in sorted(slots, key=len, reverse=True))
    body = re.sub(pattern, lambda m: slots[m.group()], program)
    if require_phrase and not any(marker(k) in body for k in range(len(words))):
        return None
    return WHEN + json.dumps(shape, ensure_ascii=False) + "\n" + body


_SLOTS = re.compile(r"__vprl_(?:phrase_(\d+)|question)__")


def instance(form: str, question: str) -> str | None:
    """The form's program for `question`; None for a phrase form whose template is not the
    question's. One pass: a phrase that itself reads like a slot is written as it is."""
    words: list[str] = []
    if form.startswith(WHEN):
        head, form = form.split("\n", 1)
        shape, words = template(question)
        if json.loads(head[len(WHEN):]) != shape:
            return None
    fill = [literal(word) for word in words]
    if any(m.group(1) is not None and int(m.group(1)) >= len(fill) for m in _SLOTS.finditer(form)):
        return None
    return _SLOTS.sub(lambda m: fill[int(m.group(1))] if m.group(1) is not None else literal(question), form)


def score_programs(rows, programs: list[str], executor, reward_set, metric) -> list:
    """Whole programs run on their rows in one sandbox batch and scored by the run's reward."""
    return execute_and_score(rows, [""] * len(programs), programs, executor, reward_set,
                             metric=metric) if programs else []


def _tried(forms: list[str], targets: list[int], rows: list[dict], executor, reward_set, metric) -> list[tuple]:
    """(form, row, program, scored) for each form's instance on each target question it applies to."""
    pairs = [(form, row, program) for form in forms for row in targets
             if (program := instance(form, rows[row]["question"])) is not None]
    programs = [program for _, _, program in pairs]
    scored = score_programs([rows[row] for _, row, _ in pairs], programs, executor, reward_set, metric)
    return [(form, row, program, sc) for (form, row, program), sc in zip(pairs, scored)]


def _composed_forms(family, todo: dict, rows, executor, reward_set, metric, calls: int, attributes: bool) -> Counter:
    """Phrase forms of the composed programs (`policies.compose`) that beat a searched
    question's samples there, with how many searched questions each came from. A program
    that reads no phrase (the whole question only) is not run: it lifts to no phrase form."""
    programs, owners, forms_of = [], [], []
    for row in sorted(todo):
        question = rows[row]["question"]
        for program in composed(family.program_prefix, family.body_start, family.api, question, calls, quote=literal,
                                attributes=attributes):
            if (form := lift_phrases(program, question)) is not None:
                programs.append(program)
                owners.append(row)
                forms_of.append(form)
    scored = score_programs([rows[row] for row in owners], programs, executor, reward_set, metric)
    forms: Counter = Counter()
    for row, form, sc in zip(owners, forms_of, scored):
        if sc.reward is not None and (todo[row] is None or sc.reward > todo[row]):
            forms[form] += 1
    return forms


def column(rows, key: str) -> list:
    """A column of `rows`: a `datasets.Dataset` reads it without decoding an image."""
    try:
        return list(rows[key])
    except (TypeError, KeyError, IndexError):
        return [row[key] for row in rows]


def questions_by_template(questions: list[str]) -> Mapping[str, tuple[int, ...]]:
    """Template (as a form's `WHEN` line holds it) -> the indices of the questions that have it, in order.
    Search and template tests both ask it of the same training questions every iteration, so it is
    computed once and shared: read-only, as every caller holds the same object."""
    return _by_template(tuple(questions))


@functools.lru_cache(maxsize=2)
def _by_template(questions: tuple[str, ...]) -> Mapping[str, tuple[int, ...]]:
    out: dict = defaultdict(list)
    for i, question in enumerate(questions):
        out[json.dumps(template(question)[0], ensure_ascii=False)].append(i)
    return MappingProxyType({key: tuple(indices) for key, indices in out.items()})


def _proven(candidates: Counter, probe_rows, size: int, below: float, executor, reward_set, metric) -> dict:
    """The candidate forms right (reward >= `below`, as a searched question counts solved)
    on at least `PROBE_BAR` of the first `size` training questions of their template (at
    least `PROBE_MIN` of them), with at least two different answers there (a constant is
    not a program of the question), best per template: form -> (its share right, the
    (probe index, program, scored) of each probe question it got right).

    The `PROBE_CANDIDATES` commonest (then shortest) candidates are probed, in rounds of
    `PROBE_ROUND` questions; a form that can no longer reach the bar stops, so a guess
    costs a round or two. Best first."""
    forms = [f for f, _ in sorted(candidates.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))][:PROBE_CANDIDATES]
    if not forms:
        return {}
    questions = column(probe_rows, "question")
    by_template = questions_by_template(questions)
    head = {form: _head(form) for form in forms}
    matching = {form: by_template.get(head[form], ())[:size] for form in forms}
    alive = {form: 0 for form in forms if len(matching[form]) >= PROBE_MIN}
    answers: dict = defaultdict(set)
    right: dict = defaultdict(list)  # form -> (probe index, program, scored) where it was right
    fetched: dict = {}
    done = 0
    while alive and done < size:
        batch = [(form, i) for form in alive for i in matching[form][done: done + PROBE_ROUND]]
        if not batch:
            break
        for _, i in batch:
            if i not in fetched:
                fetched[i] = probe_rows[i]
        programs = [instance(form, questions[i]) for form, i in batch]
        scored = score_programs([fetched[i] for _, i in batch], programs, executor, reward_set, metric)
        for (form, i), program, sc in zip(batch, programs, scored):
            if sc.reward is not None and sc.reward >= below:
                alive[form] += 1
                right[form].append((i, program, sc))
            answers[form].add(sc.result.answer if sc.result is not None else None)
        done += PROBE_ROUND
        for form in list(alive):
            n = len(matching[form])
            if alive[form] + max(0, n - done) < PROBE_BAR * n:
                del alive[form]
    shares = sorted(((form, right / len(matching[form])) for form, right in alive.items() if len(answers[form]) >= 2),
                    key=lambda fs: (-fs[1], len(fs[0]), fs[0]))
    best: dict = {}  # template -> its best form (the highest share, then the shortest)
    for form, share in shares:
        best.setdefault(head[form], (form, share))
    return {form: (share, right[form]) for form, share in best.values()}  # best first


def _solved(ranked, rows, groups, name, todo, executor, reward_set, metric) -> dict:
    """The kept forms (`ranked`: best first) on the questions a sample solved: a solved
    yes/no question is often solved by chance (a program asking a fixed string is right
    half the time), and the update would reinforce that program there. Each such question
    whose best sample a form matches gets the best such form's instance, unless the policy
    sampled it already."""
    solved = sorted(row for (fam, row) in groups if fam == name and row not in todo)
    best = {row: max(ro.reward for ro in groups[(name, row)] if ro.reward is not None) for row in solved}
    sampled = {row: {ro.program for ro in groups[(name, row)]} for row in solved}
    taught = {}
    for form, row, program, sc in _tried(ranked, solved, rows, executor, reward_set, metric):
        if row not in taught and sc.reward is not None and sc.reward >= best[row] and program not in sampled[row]:
            taught[row] = (program, sc, form)
    return taught


def _head(form: str) -> str:
    """A phrase form's template, as its `WHEN` line holds it."""
    return form.split("\n", 1)[0][len(WHEN):]


def _keys(probe_rows) -> list[tuple]:
    """(question, id) of each training question: how `seen` names the iteration's own."""
    questions = column(probe_rows, "question")
    ids = column(probe_rows, "id") if "id" in probe_rows[0] else [None] * len(questions)
    return list(zip(questions, ids))


def _rehearsed(limit: int, remembered: list[str], skip: set, probe_rows, seen: set, seed: int, name: str,
               shard: tuple[int, int], executor, reward_set, metric, below: float) -> list[tuple]:
    """This rank's share of the rehearsal: the newest remembered phrase form of each template
    (not in `skip`) run on `limit` training questions of its template, drawn afresh each
    iteration (`seed`) and not this iteration's (`seen`), as (probe index, program, scored)
    where it is right (reward >= `below`). The ranks split one list, so the world size
    changes no example."""
    newest: dict = {}
    for form in remembered:  # newest first
        if form.startswith(WHEN) and _head(form) not in skip:
            newest.setdefault(_head(form), form)
    if not newest:  # nothing proven yet: the training questions are not read
        return []
    keys = _keys(probe_rows)
    questions = [question for question, _ in keys]
    by_template = questions_by_template(questions)
    pairs = []
    for head, form in sorted(newest.items()):
        pool = [i for i in by_template.get(head, ()) if keys[i] not in seen]
        random.Random(f"{seed}:{name}:{head}:rehearse").shuffle(pool)
        pairs += [(form, i) for i in pool[:limit]]
    mine = pairs[shard[0]::shard[1]]
    programs = [instance(form, questions[i]) for form, i in mine]
    scored = score_programs([probe_rows[i] for _, i in mine], programs, executor, reward_set, metric)
    return [(i, program, sc) for (_, i), program, sc in zip(mine, programs, scored)
            if sc.reward is not None and sc.reward >= below]


def _probe_taught(limit: int, proven: dict, probe_rows, seen: set, shard: tuple[int, int]) -> list[tuple]:
    """This rank's share of the probe questions each proven form is taught on: the first
    `limit` it got right that are not questions of this iteration (`seen`: every rank's,
    by question and id). The ranks split one list, so the world size changes no example."""
    keys = _keys(probe_rows)
    taught = [(i, program, sc) for _, right in proven.values()
              for i, program, sc in [r for r in right if keys[r[0]] not in seen][:limit]]
    return taught[shard[0]::shard[1]]


def search(cfg, rows: list[dict], rollouts: list[Rollout], families: dict, executor, reward_set,
           metric: str | None, seed: int, gather=None, library: dict | None = None,
           probe_rows=None, render=None, shard: tuple[int, int] = (0, 1)) -> tuple[list[Rollout], dict]:
    """Rollouts for the instances of the general forms search found, and stats.

    `families` maps a prompt-family name to its PromptFamily; script families (a `stop`
    rule: not Python) are not searched. `gather` (accelerate's `gather_object`) joins the
    ranks' forms and wins, so every world size chooses the same forms; the stats are the
    whole run's. `library` (family name -> forms, newest first) is the run's remembered
    forms: read, and updated in place when `cfg.library` > 0; it is alike on every rank.
    `probe_rows` (the training questions: a list of rows or a `datasets.Dataset`) prove
    composed forms (`cfg.compose`); every rank probes, and rank 0's verdict binds them all.
    With `cfg.teach_probe`, `render(family name, rows)` gives the (prompt, ids) of the probe
    questions taught; they are appended to `rows` (this rank's `shard`: (rank, world) of them),
    so every returned rollout's `row` indexes `rows`."""
    gather = gather or list
    library = library if library is not None else {}
    groups: dict = defaultdict(list)
    for ro in rollouts:
        family = families.get(ro.prompt_family)
        if family is not None and family.stop is None and not ro.searched:
            groups[(ro.prompt_family, ro.row)].append(ro)
    kept, stats = [], Counter()
    seen = {key for part in gather([[(r["question"], r.get("id")) for r in rows]]) for key in part} \
        if cfg.teach_probe or cfg.rehearse else set()  # the iteration's questions, every rank's: not taught twice
    for name in sorted(n for n, f in families.items() if f.stop is None):  # alike on every rank
        family = families[name]
        methods = api_methods(family.api)  # the function set of point mutation, once per family
        todo = {}  # row -> its best sampled reward
        for (fam, row), group in groups.items():
            best = max((ro.reward for ro in group if ro.reward is not None), default=None)
            if fam == name and (best is None or best < cfg.below):
                todo[row] = best
        forms: Counter = Counter()  # form -> how many searched questions it came from
        for row in sorted(todo):
            question = rows[row]["question"]
            rng = random.Random(f"{seed}:{name}:{question}:{rows[row].get('id')}")
            found = mutants([r.program for r in groups[(name, row)]], cfg.mutants_per_question, rng,
                            depth=cfg.depth, methods=methods, terminals=(question,), beam=cfg.beam)
            forms.update({form for p in found if p.startswith(family.program_prefix)
                          and (form := lift(p, question)) is not None})
        forms = sum((Counter(c) for c in gather([dict(forms)])), Counter())
        searched = sum(gather([len(todo)]))
        chosen = [form for form, _ in sorted(forms.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))][: cfg.forms]
        remembered = library.get(name, [])[: cfg.library]  # proved general earlier: one win here is enough
        chosen += [form for form in remembered if form not in chosen]
        proven = {}  # composed phrase forms proven on the probe: general wherever their template applies
        if cfg.compose:
            candidates = _composed_forms(family, todo, rows, executor, reward_set, metric, cfg.compose, cfg.attributes)
            candidates = sum((Counter(c) for c in gather([dict(candidates)])), Counter())
            proven = _proven(candidates, probe_rows or [], cfg.probe, cfg.below, executor, reward_set, metric)
            # Every rank probed alike; rank 0's verdict binds all, so a tool timeout on one
            # rank cannot make the ranks' forms (and the collectives that follow) differ.
            proven = gather([proven])[0]  # best first
            chosen += [form for form in proven if form not in chosen]
            stats["search/composed_forms"] += len(candidates)
            stats["search/proven"] += len(proven)
        tried = _tried(chosen, sorted(todo), rows, executor, reward_set, metric)
        wins = defaultdict(list)  # form -> its instances that beat their question's samples
        for form, row, program, sc in tried:
            if sc.reward is not None and (todo[row] is None or sc.reward > todo[row]):
                wins[form].append((row, program, sc))
        won = sum((Counter(c) for c in gather([{form: len(w) for form, w in wins.items()}])), Counter())
        general = [form for form in chosen if won[form] >= max(1, cfg.min_share * searched)
                   or (form in remembered and won[form] >= 1) or form in proven]
        taught = {}  # row -> its one searched program: the instance of the best general form that wins there
        # A phrase form was proven on its own template's questions: more telling there than a form
        # that wins across them all. Then the run's wins (ties: chosen order): alike on every rank.
        ranked = sorted(general, key=lambda f: (not f.startswith(WHEN), -won[f], len(f)))
        for form in ranked:
            for row, program, sc in wins[form]:
                taught.setdefault(row, (program, sc, form))
        usable = ranked + [form for form in remembered if form not in ranked]
        if cfg.teach_solved and usable:
            solved = _solved(usable, rows, groups, name, todo, executor, reward_set, metric)
            taught.update(solved)
            stats["search/taught_solved"] += sum(gather([len(solved)]))
        stats["search/taught_composed"] += sum(gather([sum(form.startswith(WHEN) for *_, form in taught.values())]))
        for row, (program, sc, _) in sorted(taught.items()):
            ro = rescored(groups[(name, row)][0], program, sc, rows[row], metric)
            kept.append(replace(ro, refined=False, searched=True, completion=program[len(family.program_prefix):],
                                completion_ids=[]))
        extra = {}  # stat -> this rank's (probe index, program, scored) to teach as new rows of the batch
        if cfg.teach_probe and proven and render is not None:
            extra["search/taught_probe"] = _probe_taught(cfg.teach_probe, proven, probe_rows, seen, shard)
        if cfg.rehearse and render is not None:  # a form just taught on its probe is not rehearsed too
            skip = {_head(form) for form in proven} if cfg.teach_probe else set()
            extra["search/rehearsed"] = _rehearsed(cfg.rehearse, library.get(name, []), skip, probe_rows, seen,
                                                   seed, name, shard, executor, reward_set, metric, cfg.below)
        for key, probed in extra.items():
            prompts = render(name, [probe_rows[i] for i, _, _ in probed])
            for (i, program, sc), (prompt, ids) in zip(probed, prompts):
                rows.append(probe_rows[i])
                kept.append(written(len(rows) - 1, prompt, ids, program, family.program_prefix, sc, rows[-1],
                                    metric, name))
            stats[key] += sum(gather([len(probed)]))
        if cfg.library:  # this iteration's proven, then general forms first; the oldest remembered fall off
            library[name] = list(dict.fromkeys(list(proven) + general + library.get(name, [])))[: cfg.library]
            stats["search/library"] = len(library[name])
        stats.update({"search/questions": searched, "search/forms": len(forms),
                      "search/tried": sum(gather([len(tried)])), "search/general_forms": len(general)})
    stats["search/kept"] = sum(gather([len(kept)]))  # one per improved question
    return kept, dict(stats)

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

No label enters the search itself: forms are chosen by the run's own reward, so a
label-free reward stays label-free. The draw depends on the questions, not on the rank
holding them.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import replace

from policies.mutation import api_methods, literal, mutants
from rewards.combine import execute_and_score
from train.rollout import Rollout, rescored

SLOT = "__vprl_question__"


def lift(program: str, question: str) -> str | None:
    """The program's form: the question, where it is a string of the program, made a slot."""
    for quoted in dict.fromkeys((literal(question), json.dumps(question, ensure_ascii=False))):
        if quoted in program:
            return program.replace(quoted, SLOT)
    return None


def instance(form: str, question: str) -> str:
    return form.replace(SLOT, literal(question))


def _solved(general, won, rows, groups, name, todo, executor, reward_set, metric) -> dict:
    """The kept forms on the questions a sample solved: a solved yes/no question is often
    solved by chance (a program asking a fixed string is right half the time), and the
    update would reinforce that program there. Each such question whose best sample the
    form matches gets the best form's instance, unless the policy sampled it already."""
    solved = sorted(row for (fam, row) in groups if fam == name and row not in todo)
    order = sorted(general, key=lambda f: (-won[f], len(f)))
    pairs = [(form, row) for form in order for row in solved]
    programs = [instance(form, rows[row]["question"]) for form, row in pairs]
    scored = execute_and_score([rows[row] for _, row in pairs], [""] * len(programs), programs, executor,
                               reward_set, metric=metric) if programs else []
    taught = {}
    for (form, row), program, sc in zip(pairs, programs, scored):
        group = groups[(name, row)]
        best = max(ro.reward for ro in group if ro.reward is not None)
        if row not in taught and sc.reward is not None and sc.reward >= best \
                and program not in {ro.program for ro in group}:
            taught[row] = (program, sc)
    return taught


def search(cfg, rows: list[dict], rollouts: list[Rollout], families: dict, executor, reward_set,
           metric: str | None, seed: int, gather=None) -> tuple[list[Rollout], dict]:
    """Rollouts for the instances of the general forms search found, and stats.

    `families` maps a prompt-family name to its PromptFamily; script families (a `stop`
    rule: not Python) are not searched. `gather` (accelerate's `gather_object`) joins the
    ranks' forms and wins, so every world size chooses the same forms; the stats are the
    whole run's."""
    gather = gather or list
    groups: dict = defaultdict(list)
    for ro in rollouts:
        family = families.get(ro.prompt_family)
        if family is not None and family.stop is None and not ro.searched:
            groups[(ro.prompt_family, ro.row)].append(ro)
    kept, stats = [], Counter()
    for name in sorted(n for n, f in families.items() if f.stop is None):  # alike on every rank
        family = families[name]
        methods = api_methods(family.api)  # the function set of point mutation, once per family
        todo = {}  # row -> (a rollout of it, its best sampled reward)
        for (fam, row), group in groups.items():
            best = max((ro.reward for ro in group if ro.reward is not None), default=None)
            if fam == name and (best is None or best < cfg.below):
                todo[row] = (group[0], best)
        forms: Counter = Counter()  # form -> how many searched questions it came from
        for row, (ro, _) in sorted(todo.items()):
            question = rows[row]["question"]
            rng = random.Random(f"{seed}:{name}:{question}:{rows[row].get('id')}")
            found = mutants([r.program for r in groups[(name, row)]], cfg.mutants_per_question, rng,
                            depth=cfg.depth, methods=methods, terminals=(question,), beam=cfg.beam)
            forms.update({form for p in found if p.startswith(family.program_prefix)
                          and (form := lift(p, question)) is not None})
        forms = sum((Counter(c) for c in gather([dict(forms)])), Counter())
        searched = sum(gather([len(todo)]))
        chosen = [form for form, _ in sorted(forms.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))][: cfg.forms]
        pairs = [(form, row) for form in chosen for row in sorted(todo)]
        programs = [instance(form, rows[row]["question"]) for form, row in pairs]
        scored = execute_and_score([rows[row] for _, row in pairs], [""] * len(programs), programs, executor,
                                   reward_set, metric=metric) if programs else []
        wins = defaultdict(list)  # form -> its instances that beat their question's samples
        for (form, row), program, sc in zip(pairs, programs, scored):
            best = todo[row][1]
            if sc.reward is not None and (best is None or sc.reward > best):
                wins[form].append((row, program, sc))
        won = sum((Counter(c) for c in gather([{form: len(w) for form, w in wins.items()}])), Counter())
        general = [form for form in chosen if won[form] >= max(1, cfg.min_share * searched)]
        taught = {}  # row -> its one searched program: the instance of the best general form that wins there
        for form in sorted(general, key=lambda f: (-won[f], len(f))):  # the run's wins (ties: chosen order): alike on every rank
            for row, program, sc in wins[form]:
                taught.setdefault(row, (program, sc))
        if cfg.teach_solved and general:
            solved = _solved(general, won, rows, groups, name, todo, executor, reward_set, metric)
            taught.update(solved)
            stats["search/taught_solved"] += sum(gather([len(solved)]))
        for row, (program, sc) in sorted(taught.items()):
            first = todo[row][0] if row in todo else groups[(name, row)][0]
            ro = rescored(first, program, sc, rows[row], metric)
            kept.append(replace(ro, refined=False, searched=True, completion=program[len(family.program_prefix):],
                                completion_ids=[]))
        stats.update({"search/questions": searched, "search/forms": len(forms),
                      "search/tried": sum(gather([len(programs)])), "search/general_forms": len(general)})
    stats["search/kept"] = sum(gather([len(kept)]))  # one per improved question
    return kept, dict(stats)

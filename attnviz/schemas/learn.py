"""Learn mode: ``GET /api/learn`` (the steps) and ``POST /api/learn/{id}/check`` (a step's
tasks checked on the learner's state)."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from attnviz.limits import LIMITS
from attnviz.schemas.common import Int, Strict, ToyConfig, char_class, characters
from attnviz.schemas.trace import ToyTraceRequest
from attnviz.schemas.train import TRAIN_SHAPE


class LearnToyView(Strict):
    """A toy step's view as the page holds it (core/types.js ToyView)."""

    layer: Int = Field(ge=0, description="The heatmaps' layer (0-based)")
    head: Int = Field(ge=0, description="The heatmaps' head (0-based)")
    vlayer: Int = Field(ge=0, description="The vectors' layer (0: the input)")
    a: Int = Field(ge=0, description="The distance's first token")
    b: Int = Field(ge=0, description="The distance's second token")
    trails: bool = True


class LearnToyState(BaseModel):
    """A whole toy lab state (core/types.js ToyState): the table, its config and the view."""

    preset: str | None = Field(description="The preset it starts from (its config may differ)")
    tokens: list[str]
    axes: list[str]
    embeddings: list[list[float]]
    config: ToyConfig
    view: LearnToyView


class LearnTrain(BaseModel):
    settings: dict[str, str] = Field(
        description="The Train tab's form fields by name, as text (as modes/train/link.js "
        "carries them): {} for step 1, whose card is the recurrent comparison"
    )


class LearnTask(BaseModel):
    id: str
    prompt: str
    hint: str
    finding: bool = Field(
        False,
        description="A finding (a head found in the learner's run): once done it stays done "
        "while the learner looks elsewhere (step 12's two heads are never in view at once)",
    )
    action: str | None = Field(
        None,
        description="The id of the lab's button the task needs: the page shows a button of the "
        "same name in the task, which presses it",
    )
    reads: list[str] = Field(
        default_factory=list,
        description="A toy task: the parts of the lab it reads, as the page names them (W_Q, "
        "the table...): a change to one of them is a try at it (empty: the whole lab)",
    )


class ArticleRow(BaseModel):
    label: str
    article: list[float] = Field(description="As the article states them")
    engine: list[float] = Field(
        description="The engine's, from the step's starting state, at full precision"
    )


class ArticleTable(BaseModel):
    caption: str
    columns: list[str]
    decimals: int = Field(description="The article's rounding: the engine's numbers round to it")
    rows: list[ArticleRow]


class LearnStep(BaseModel):
    n: int = Field(description="1-based: #learn/n")
    id: str
    title: str
    lab: Literal["toy", "train"]
    text: list[str] = Field(description="Paragraphs, plain text")
    formula: str = Field(description="Presentation MathML, one <math display=block> element")
    formula_text: str = Field(description="The formula in plain text (its text alternative)")
    toy: LearnToyState | None = Field(description="A toy step's starting state")
    train: LearnTrain | None = Field(description="A train step's starting form")
    continues: str | None = Field(
        None,
        description="A train step that goes on with an earlier step's run: that step's id (the "
        "page keeps the run trained there in view, and this step's check reads it)",
    )
    focus: list[str] = Field(description="Ids of the page's elements the step is about")
    only: list[str] = Field(
        default_factory=list,
        description="Ids of the lab's cards the step shows (empty: the whole lab)",
    )
    tasks: list[LearnTask]
    article: list[ArticleTable] = Field(description="The article's numbers beside the engine's")


class LearnSteps(BaseModel):
    steps: list[LearnStep]


class LearnView(Strict):
    """What the learner looks at. A toy step: the heatmaps' layer and head, the vectors' layer,
    the distance pair (``trails`` is accepted and not read). A train step: the run's variant,
    the head in view and the cell of its heatmap whose *Why this score* is open (``query`` and
    ``key``, together)."""

    layer: Int = Field(0, ge=0, le=LIMITS.max_layers - 1, description="0-based")
    head: Int = Field(0, ge=0, le=LIMITS.max_heads - 1, description="0-based")
    vlayer: Int | None = Field(None, ge=0, le=LIMITS.max_layers, description="toy steps")
    a: Int | None = Field(None, ge=0, le=LIMITS.max_tokens - 1, description="toy steps")
    b: Int | None = Field(None, ge=0, le=LIMITS.max_tokens - 1, description="toy steps")
    trails: bool | None = Field(None, description="toy steps")
    variant: Int | None = Field(
        None, ge=0, le=TRAIN_SHAPE.max_variants - 1, description="train steps (0-based)"
    )
    query: Int | None = Field(
        None,
        ge=0,
        le=LIMITS.max_tokens - 1,
        description="train steps: the row (0-based token of the probe) of the cell whose Why "
        "this score is open, with key",
    )
    key: Int | None = Field(
        None,
        ge=0,
        le=LIMITS.max_tokens - 1,
        description="train steps: that cell's column (a key the query sees)",
    )

    chosen: bool | None = Field(
        None,
        description="train steps: whether the learner chose this head (the page sends false "
        "for the first head it shows; none: chosen): a head is found only when chosen",
    )
    attention: Literal["self", "cross", "encoder"] | None = Field(
        None,
        description="train steps: the attention the heads card shows (an encoder-decoder's "
        "self, cross or encoder attention; step 11 reads cross-attention only)",
    )

    @model_validator(mode="after")
    def _cell(self) -> LearnView:
        if (self.query is None) != (self.key is None):
            sent, other = ("query", "key") if self.key is None else ("key", "query")
            raise ValueError(f"view.{other}: send it with view.{sent} (a cell is both)")
        return self


class LearnFound(Strict):
    """A task of a train step found done earlier with a head of its own, not the head in view
    (kept by the page, as a Learn link's ``found=`` carries it): while that head still passes
    the task on the run, the check names it as the task's head, not the strongest."""

    task: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$", description="The task's id")
    variant: Int = Field(
        0, ge=0, le=TRAIN_SHAPE.max_variants - 1, description="The run's variant (0-based)"
    )
    layer: Int = Field(ge=0, le=LIMITS.max_layers - 1, description="0-based")
    head: Int = Field(ge=0, le=LIMITS.max_heads - 1, description="0-based")


# A check's found names a head per task of its step (one to three): a bound for any step.
_FOUND_CAP = 16

_TOY_VIEW = ("vlayer", "a", "b", "trails")
_TRAIN_VIEW = ("variant", "query", "key", "chosen", "attention")


class LearnCheckRequest(Strict):
    """One of: a toy step's table and view (the table exactly as POST /api/trace takes it), a
    train step's run and view, or step 1's recurrent comparison."""

    toy: ToyTraceRequest | None = Field(None, description="toy steps: the table and its config")
    run: str | None = Field(
        None, min_length=1, max_length=64, description="train steps 11-17: the run's id"
    )
    recurrent: str | None = Field(
        None, min_length=1, max_length=64, description="step 1: the comparison's id"
    )
    view: LearnView | None = None
    found: list[LearnFound] = Field(
        default_factory=list,
        max_length=_FOUND_CAP,
        description="train steps: the tasks of the step found done earlier on this run, each "
        "with the head it was found with (not read otherwise): the answers name that head as "
        "the task's, not the strongest",
    )
    from_link: bool = Field(
        False,
        description="True when the lab's state is exactly what the Learn link it was opened "
        "from carried (another learner's lab, unchanged): the check is answered as any, and "
        "the caller's progress counts it as seen, never as a task done or tried",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> LearnCheckRequest:
        sent = [k for k in ("toy", "run", "recurrent") if getattr(self, k) is not None]
        if not sent:
            raise ValueError(
                "body: send toy (a toy step's table), run (a train step's run) or recurrent "
                "(step 1's comparison)"
            )
        if len(sent) > 1:
            raise ValueError(f"{sent[1]}: send one of toy, run and recurrent, not {sent}")
        if self.found and self.run is None:
            raise ValueError("found: only a train step's check has it (send it with run)")
        v = self.view
        if v is None:
            return self
        if self.recurrent is not None:
            raise ValueError("view: step 1's check reads no view; send recurrent alone")
        if self.toy is not None:
            for name in _TRAIN_VIEW:
                if getattr(v, name) is not None:
                    raise ValueError(f"view.{name}: only a train step's view has it")
        if self.run is not None:
            for name in _TOY_VIEW:
                if getattr(v, name) is not None:
                    raise ValueError(f"view.{name}: only a toy step's view has it")
        return self


class LearnTaskResult(BaseModel):
    id: str
    done: bool
    says: str = Field(description="What is true now, with the numbers, and why")
    tried: bool = Field(
        True,
        description="The learner has tried the task: changed a part of the lab it reads from "
        "the step's start (a toy step's; a train step's tasks always). Until then ``says`` "
        "says only that it is not started, never how to solve it",
    )
    cell: list[int] | None = Field(
        None,
        description="A cell the answer points at, [query, key] (0-based tokens of the heatmap "
        "in view), which the page marks",
    )


class LearnCheck(BaseModel):
    step: str
    tasks: list[LearnTaskResult]
    credited: bool = Field(
        False,
        description="Whether the caller's progress counts this answer: the lab is the caller's "
        "own work (changed from the step's start, not a Learn link's state unchanged, not "
        "another visitor's run or comparison); the page keeps only such answers too",
    )
    seen: str | None = Field(
        None,
        description="When the check is of someone else's work (a Learn link's lab as it came, "
        "from_link; another visitor's run or comparison), whose it is, that its answers count "
        "for no one, and what makes it the caller's own, in words: the page shows a task done "
        "on it as shown, not done. Null for the caller's own work and the step's untouched "
        "start",
    )
    article: list[ArticleTable] | None = Field(
        None,
        description="A toy step's article tables with the engine's numbers read from the trace "
        "of the learner's table as sent (empty: the step has none); null for a table whose "
        "tokens or axes are no longer the article's (its numbers are then the step's, from "
        "the article's table), and for the other steps",
    )


# -- The progress the server keeps (GET /api/learn/progress) and the class view -------------------

_NICKNAME_CAP = LIMITS.max_nickname_chars


@cache
def nickname_pattern() -> str:
    """``LearnNickname``'s rule as a pattern, for the OpenAPI schema: none of ``_INVISIBLE``
    anywhere (lone surrogates aside, which no pattern can name: the server alone refuses
    those), and, spaces collapsed, not ``_ANONYMOUS`` (Python's ``\\s`` and ``\\d`` are
    every Unicode space and decimal digit, spelled out here). Made when the schema is first
    asked for, not at import."""
    bad, space, digit = [], [], []
    for c in characters():
        kind = unicodedata.category(c)
        if kind in _INVISIBLE:
            bad.append(c)
        elif kind == "Nd":
            digit.append(c)
        elif c.isspace():
            space.append(c)
    learner = "".join(f"[{c}{c.upper()}]" for c in "learner")
    spaces = f"[{char_class(space)}]*"
    return f"^(?!{spaces}{learner}{spaces}[{char_class(digit)}]+{spaces}$)[^{char_class(bad)}]*$"


class LearnNickname(Strict):
    """The name the operator's class view shows for the caller (null or blank: none, and the
    class view says ``Learner <n>``)."""

    nickname: str | None = Field(
        None,
        json_schema_extra=lambda schema: schema.update(
            maxLength=_NICKNAME_CAP, pattern=nickname_pattern()
        ),
        description=f"One line of visible text, at most {_NICKNAME_CAP} characters "
        "(LIMITS.max_nickname_chars), spaces at either end dropped; no control, format or "
        "private-use character, line or paragraph separator or lone surrogate, and not "
        "'Learner <n>' (how the class view names a learner without one); null or blank: none",
    )

    @field_validator("nickname", mode="before")
    @classmethod
    def _capped(cls, value: object) -> object:
        if isinstance(value, str) and len(value) > _NICKNAME_CAP:
            raise ValueError(
                f"{len(value)} characters is over the cap of {_NICKNAME_CAP} "
                "(LIMITS.max_nickname_chars)"
            )
        return value

    @field_validator("nickname")
    @classmethod
    def _visible(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for ch in value:
            if unicodedata.category(ch) in _INVISIBLE:
                raise ValueError(
                    f"U+{ord(ch):04X} is a control or format character: a nickname is one line "
                    "of visible text"
                )
        value = " ".join(value.split())
        if _ANONYMOUS.fullmatch(value):
            raise ValueError(
                f"{value!r} is how the class view names a learner who gave no nickname: "
                "choose another"
            )
        return value or None


# Control, format (invisible, or turning text around), surrogate and private-use characters,
# and the line and paragraph separators.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
_ANONYMOUS = re.compile(r"learner\s*\d+", re.IGNORECASE)


class LearnStepProgress(BaseModel):
    done: list[str] = Field(description="The step's tasks the server's checks found done")
    tried: list[str] = Field(
        description="Its tasks checked on a lab the learner had changed (done or not)"
    )


class LearnProgress(BaseModel):
    """The caller's Learn progress as the server keeps it (their browser keeps its own)."""

    kept: bool = Field(description="Whether the server holds a record of the caller")
    nickname: str | None = Field(description="The name the class view shows, or null")
    last: str | None = Field(description="The step of the caller's latest check (its id)")
    steps: dict[str, LearnStepProgress] = Field(description="By step id")
    watched: bool = Field(
        description="Whether this server has an operator (ATTNVIZ_ADMIN_TOKEN), who sees every "
        "learner's progress in the class view"
    )
    note: str | None = Field(
        None, description="Why the server keeps no progress now (its file cannot be used)"
    )


class ClassStep(BaseModel):
    n: int = Field(description="1-based")
    id: str
    title: str


class ClassStuckTask(BaseModel):
    prompt: str = Field(description="The task, as the step asks it")
    tries: int = Field(description="Different states of the lab it was checked on, not done")
    first_try: float = Field(description="Unix seconds")
    last_try: float = Field(description="Unix seconds")


class ClassStuck(ClassStep):
    tasks: list[ClassStuckTask] = Field(
        description="The step's tasks the learner is stuck on (tried at least stuck_tries "
        "times, over at least stuck_s seconds, and not done)"
    )


class ClassLearner(BaseModel):
    label: str = Field(description="The learner's nickname, else 'Learner <n>'")
    named: bool = Field(description="Whether the label is a nickname the learner gave")
    on: ClassStep | None = Field(
        description="The step the learner has open (the page says so as it opens one: POST "
        "/api/learn/{id}/open), else the step of their latest check"
    )
    done: list[int] = Field(description="The steps whose every task is done (1-based)")
    stuck: list[ClassStuck] = Field(description="The steps with tasks the learner is stuck on")
    started: bool = Field(
        description="Whether any task was checked on the learner's own work (a lab they "
        "changed, a run they started): false for one who has only opened steps or others' links"
    )
    looked: bool = Field(
        description="Whether they opened someone else's work: a Learn link's state as it came, "
        "another visitor's run or comparison (a teacher's browser without the token does)"
    )
    last_seen: float = Field(description="Unix seconds")
    seen_s: float = Field(description="Seconds between last_seen and now")


class LearnClass(BaseModel):
    """Every learner's progress, for the operator: never a visitor's id or cookie."""

    learners: list[ClassLearner] = Field(description="The learner seen most recently first")
    steps: int = Field(description="The path's steps")
    now: float = Field(description="The server's clock, Unix seconds")
    poll_s: float = Field(description="The class view asks again this often")
    stuck_tries: int = Field(
        description="The rule for stuck: a task not done, tried on at least this many "
        "different states of the lab (learn.classroom.STUCK_TRIES)"
    )
    stuck_s: float = Field(
        description="The rule for stuck: its first and latest tries at least this many seconds "
        "apart (learn.classroom.STUCK_S)"
    )
    max_learners: int = Field(description="Learners kept (ATTNVIZ_LEARN_MAX_LEARNERS)")
    keep_days: float | None = Field(
        description="A learner unseen this long is forgotten (ATTNVIZ_LEARN_KEEP_DAYS)"
    )
    note: str | None = Field(None, description="Why no progress can be read now")

"""What each `[tool.torchlint]` key means, for docs/configuration.md.

`torchlint.config` validates keys in code, one branch per key, so it cannot describe them; this
table does, and the generator (`python -m torchlint.docsgen`) renders it. Defaults are read
from `Config` itself where they are plain values, and tests/test_config_reference.py loads
every example through `load_config`, so the page cannot drift from what the reader accepts:
a key added to the reader without a row here fails that test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    key: str  # as written in [tool.torchlint]
    type: str  # the TOML type
    summary: str  # what it does; Markdown
    example: str  # a TOML value the reader accepts
    default: str | None = None  # how to read the default; None: rendered from Config's field
    flags: tuple[str, ...] = ()  # command-line flags that set or extend it

    @property
    def attribute(self) -> str:
        """The `Config` field holding it."""
        return self.key.replace("-", "_")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "select", "list of selectors",
        "The rules to run. A selector is a code (`TL301`), a rule name (`load-without-map-location`), "
        "a code prefix (`TL3`, `TL`) or `ALL`. Exact codes, names and `ALL` also enable default-off "
        "rules; a prefix enables only the default-on rules under it.",
        '["TL1", "TL301"]', default="every default-on rule", flags=("--select",),
    ),
    Setting(
        "extend-select", "list of selectors",
        "Rules to run on top of `select` (or of the default set): the way to turn on one "
        "default-off rule without restating the selection.",
        '["TL603"]', flags=("--extend-select",),
    ),
    Setting(
        "ignore", "list of selectors",
        "Rules not to run, whatever selected them.",
        '["TL201", "dataloader-without-num-workers"]', flags=("--ignore",),
    ),
    Setting(
        "per-file-ignores", "table of glob = list of selectors",
        "Rules not to report in files matching a glob, matched against the path relative to the "
        "project root and against the file name.",
        '{ "tests/*" = ["TL301"], "scripts/*.py" = ["TL2"] }', flags=("--per-file-ignores",),
    ),
    Setting(
        "include", "list of globs",
        "Which files a folder walk checks, by name. The default takes Python files and Jupyter "
        "notebooks; `[\"*.py\", \"*.pyi\"]` leaves notebooks out. A file named on the command line "
        "is checked whatever it is called.",
        '["*.py", "*.pyi"]',
    ),
    Setting(
        "extend-include", "list of globs",
        "More file names to check on top of `include` (a project's own Python files with another "
        "suffix).",
        '["*.pyw"]',
    ),
    Setting(
        "exclude", "list of globs",
        "Paths never checked when a folder is walked. Setting it replaces the defaults; "
        "`extend-exclude` adds to them. A glob without `/` matches any path component.",
        '[".git", ".venv", "build"]', flags=("--exclude",),
    ),
    Setting(
        "extend-exclude", "list of globs",
        "Paths to skip on top of `exclude`.",
        '["legacy", "gen/*.py"]', flags=("--extend-exclude",),
    ),
    Setting(
        "respect-gitignore", "boolean",
        "Skip the files `.gitignore` files ignore when walking folders.",
        "false",
    ),
    Setting(
        "project-context", "boolean",
        "When some files of a project are given (the files pre-commit passes, one file, a "
        "subfolder), read the project's other files too, from the cache when fresh, for the facts "
        "cross-file findings need (a model in `models.py` trained in `train.py`, whether the project "
        "uses an accelerator at all), and report only the files given: each file gets the findings "
        "a check of the whole project gives it. The project is the nearest folder up holding a "
        "pyproject.toml, setup.py, setup.cfg, requirements.txt or .git; its files are found as a "
        "check run there finds them, and a project of more than 10,000 files is not read (a warning "
        "says so). `false` reads only the files given.",
        "false", flags=("--project-context", "--no-project-context"),
    ),
    Setting(
        "target-torch", "version string",
        "The oldest torch the code must run on. Rules whose advice depends on the version read it: "
        "`torch.load` without `weights_only` is reported only for targets before 2.6 (from 2.6 it "
        "is the default), and the `torch.cuda.amp` fix is safe from 2.4.",
        '"2.4"', default="the lower bound of `torch` in the nearest pyproject.toml's `[project] dependencies` "
        "(`torch>=2.7` reads as 2.7; `--show-settings` says where it came from); with none, unset: "
        "the code may run on any torch version", flags=("--target-torch",),
    ),
    Setting(
        "fix", "boolean",
        "Apply safe fixes on every `torchlint check`, as if `--fix` were given (`--no-fix` turns it "
        "off for one run).",
        "true", flags=("--fix", "--no-fix"),
    ),
    Setting(
        "unsafe-fixes", "boolean",
        "Also offer and apply fixes that may change behaviour, as if `--unsafe-fixes` were given.",
        "true", flags=("--unsafe-fixes", "--no-unsafe-fixes"),
    ),
    Setting(
        "fixable", "list of selectors",
        "The rules whose fixes may be applied; the others are reported but never fixed.",
        '["TL4", "TL5"]', default="every rule", flags=("--fixable",),
    ),
    Setting(
        "extend-fixable", "list of selectors",
        "Rules whose fixes may be applied, on top of `fixable`.",
        '["TL301"]', flags=("--extend-fixable",),
    ),
    Setting(
        "unfixable", "list of selectors",
        "Rules whose fixes are never applied, whatever `fixable` says.",
        '["TL302"]', flags=("--unfixable",),
    ),
    Setting(
        "cache-dir", "folder path",
        "Where the per-file result cache goes, relative to the project root. It must be a folder "
        "torchlint creates (or an empty one): a folder already holding other files is refused, exit "
        "code 2, never tagged or hidden from git. `torchlint clean` removes only torchlint's own "
        "entries in it, and the folder when nothing else is left.",
        '".cache/torchlint"', default="`.torchlint_cache` in the project root", flags=("--cache-dir",),
    ),
    Setting(
        "plugins", "list of module names",
        "Plugin modules to load. Each is imported, running its top-level code, by every command that "
        "reads this configuration (`check`, `run`, `rules`, `rule`, `plugins`, and the language server "
        "when an editor opens the folder; not `clean`). A module installed in the environment is found "
        "first; otherwise it comes from the project root (the folder of the configuration file), "
        "searched last so that a file there cannot shadow an installed module. So a configuration in "
        "a tree you check runs code that tree chose: `--isolated` (the language server's `isolated` "
        "option) reads no configuration, and imports none of this, for code you do not trust.",
        '["my_local_rules"]',
    ),
)

#: The table a plugin reads with `config.plugin_options(name)`; documented in its own section.
PLUGIN_TABLE_EXAMPLE = '[tool.torchlint.my_local_rules]\nthreshold = 3\n'

"""Sphinx extension (a Jupyter Book local extension): the HTML of the book, tidied for
readers.

- Explore cells are pre-rendered (``lib.common.widgets.static_html``): the built page
  shows their
  HTML form, never a widget view (``nb_mime_priority_overrides`` in ``_config.yml``), so
  the widget-state JSON that MyST-NB embeds in each page is dead weight and is dropped
  here.
- A script registered twice (sphinx-thebe's ``const THEBE_JS_URL`` ends up in every page
  twice,
  which is a SyntaxError in the browser console) is kept once.
- The theme's default mode is "light": with none, pydata-sphinx-theme logs a console
  error on a
  reader's first visit ("Got invalid theme mode").
- ``book.css`` fits code (88 columns), tables, figures and the pre-rendered Explore
  controls to the
  text column.
"""

from __future__ import annotations

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _script_key(js) -> tuple:
    attrs = getattr(js, "attributes", None) or {}
    name = getattr(js, "filename", js if isinstance(js, str) else None) or ""
    return (name, tuple(sorted((k, str(v)) for k, v in attrs.items())))


def tidy_scripts(app, pagename, templatename, context, doctree) -> None:
    files = context.get("script_files")
    if not files:
        return
    seen, keep = set(), []
    for js in files:
        attrs = getattr(js, "attributes", None) or {}
        if attrs.get("type") == WIDGET_STATE:
            continue
        key = _script_key(js)
        if key in seen:
            continue
        seen.add(key)
        keep.append(js)
    files[:] = keep


def light_mode(app, config) -> None:
    context = dict(config.html_context or {})
    context.setdefault(
        "default_mode", "light"
    )  # a template variable of pydata-sphinx-theme
    config.html_context = context


def setup(app):
    app.connect("config-inited", light_mode)
    app.connect("html-page-context", tidy_scripts, priority=501)
    app.add_css_file("book.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

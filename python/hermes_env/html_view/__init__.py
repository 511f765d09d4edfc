"""The HTML view of a run: one self-contained page per jsonl of scored groups (``process`` writes it).

Per group: task id, mean reward and scores, the user prompt once; per rollout: how it ended, its
turns with reasoning set apart, tool calls and tool errors highlighted, the reward's own checks
(why it scored what it did), and on demand its tokens coloured by mask with their logprobs.
``python -m hermes_env.html_view RUN.jsonl`` renders an existing file, streaming it: the first
``DEFAULT_MAX_GROUPS`` groups in full, the others one row each; ``--group N`` renders group N alone.
"""

from hermes_env.html_view.render import DEFAULT_MAX_GROUPS, DEFAULT_MAX_TOKENS, render_html, write_html, write_page

__all__ = ["DEFAULT_MAX_GROUPS", "DEFAULT_MAX_TOKENS", "render_html", "write_html", "write_page"]

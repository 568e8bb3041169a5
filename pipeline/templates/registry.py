"""The template registry: every template registered once, by id, in declaration order.

Intent modules call ``register`` at import; ``pipeline.templates`` imports them all, so importing
the package gives the full catalogue. A second template under an existing id is an error, as is a
template reading a table outside its intent's tables (``pipeline.capabilities.INTENT_TABLES``):
the loader and the CLI rely on that map to say which intents a partial database can serve.
"""

from collections.abc import Iterable, Iterator

from pipeline.capabilities import INTENT_TABLES
from pipeline.templates.template import Template, TemplateError
from pipeline.vocabulary import Intent, Level


class DuplicateTemplateError(TemplateError):
    pass


class TemplateRegistry:
    def __init__(self) -> None:
        self._by_id: dict[str, Template] = {}

    def register(self, template: Template) -> Template:
        if template.id in self._by_id:
            raise DuplicateTemplateError(f"template id {template.id!r} is already registered")
        outside = sorted(template.tables - INTENT_TABLES[template.intent])
        if outside:
            raise TemplateError(f"template {template.id!r} ({template.intent.value}) reads {outside}, which are "
                                f"not among its intent's tables in pipeline/capabilities.py")
        self._by_id[template.id] = template
        return template

    def get(self, template_id: str) -> Template:
        try:
            return self._by_id[template_id]
        except KeyError:
            raise KeyError(f"no template {template_id!r}; {len(self._by_id)} are registered") from None

    def __iter__(self) -> Iterator[Template]:
        return iter(self._by_id.values())

    def __len__(self) -> int:
        return len(self._by_id)

    def select(self, intents: Iterable[Intent] | None = None, level: Level | None = None) -> list[Template]:
        wanted = None if intents is None else {Intent(i) for i in intents}
        level = None if level is None else Level(level)
        return [t for t in self if (wanted is None or t.intent in wanted) and (level is None or t.level is level)]


REGISTRY = TemplateRegistry()


def register(*templates: Template) -> None:
    for t in templates:
        REGISTRY.register(t)

"""Clinical question templates: one module per intent, registered once, extracted into clean tasks.

Importing this package registers every template (``REGISTRY``). ``extract_clean_tasks`` turns a
source database into clean tasks; see docs/architecture.md, "Templates".
"""

# Importing the intent modules registers their templates; one import per line keeps the registry in
# the order of vocabulary.Intent (a sorter must not merge these).
from pipeline.templates import demographics_encounters  # noqa: F401, I001
from pipeline.templates import diagnoses  # noqa: F401
from pipeline.templates import procedures  # noqa: F401
from pipeline.templates import medications  # noqa: F401
from pipeline.templates import laboratory  # noqa: F401
from pipeline.templates import vitals_io  # noqa: F401
from pipeline.templates.extract import (Evaluation, ExtractionError, ExtractionResult, evaluate_slots,
                                        extract_clean_tasks, extract_template)
from pipeline.templates.registry import REGISTRY, DuplicateTemplateError, TemplateRegistry, register
from pipeline.templates.template import Guard, Measure, SlotValueError, Template, TemplateError

__all__ = [
    "REGISTRY", "DuplicateTemplateError", "Evaluation", "ExtractionError", "ExtractionResult", "Guard", "Measure",
    "SlotValueError", "Template", "TemplateError", "TemplateRegistry", "evaluate_slots", "extract_clean_tasks",
    "extract_template", "register",
]

"""Who publishes a release, where, and how to cite it: shared by the dataset card and croissant.json.

The publisher's details come from the release configuration (``manifest.config.publication``:
``url``, ``creator``; the ``release`` asset's config fields of the same names). Nothing is made up:
without a URL, neither the card nor croissant.json states one.
"""

from pipeline.release.base_database import SourceTerms

DEFAULT_CREATOR = "EHR-RobustGym contributors"
TITLE = "EHR-RobustGym: Clean-Noise task pairs for robust question answering over electronic health records"
KEYWORDS = ("electronic health records", "EHR", "MIMIC-IV", "clinical question answering", "text-to-SQL",
            "robustness", "noisy data", "benchmark", "LLM agents", "data quality")

# BibTeX of each source's data, as PhysioNet asks it to be cited (the dataset, then PhysioNet itself).
_PHYSIONET = """@article{goldberger2000physionet,
  author = {Goldberger, Ary L. and Amaral, Luis A. N. and Glass, Leon and Hausdorff, Jeffrey M. and Ivanov, Plamen Ch. and Mark, Roger G. and Mietus, Joseph E. and Moody, George B. and Peng, Chung-Kang and Stanley, H. Eugene},
  title = {{PhysioBank}, {PhysioToolkit}, and {PhysioNet}: Components of a New Research Resource for Complex Physiologic Signals},
  journal = {Circulation},
  volume = {101},
  number = {23},
  pages = {e215--e220},
  year = {2000},
  doi = {10.1161/01.CIR.101.23.e215}
}"""
SOURCE_BIBTEX: dict[str, str] = {
    "synthetic": "",
    "mimic_iv_demo": """@misc{johnson2023mimicivdemo,
  author = {Johnson, Alistair and Bulgarelli, Lucas and Pollard, Tom and Horng, Steven and Celi, Leo Anthony and Mark, Roger},
  title = {{MIMIC-IV} Clinical Database Demo (version 2.2)},
  publisher = {PhysioNet},
  year = {2023},
  doi = {10.13026/dp1f-ex47},
  url = {https://physionet.org/content/mimic-iv-demo/2.2/}
}

""" + _PHYSIONET,
    "mimic_iv": """@misc{johnson2023mimiciv,
  author = {Johnson, Alistair and Bulgarelli, Lucas and Pollard, Tom and Horng, Steven and Celi, Leo Anthony and Mark, Roger},
  title = {{MIMIC-IV} (version 2.2)},
  publisher = {PhysioNet},
  year = {2023},
  doi = {10.13026/6mm1-ek67},
  url = {https://physionet.org/content/mimiciv/2.2/}
}

""" + _PHYSIONET,
}


def publication(manifest: dict) -> dict:
    """``url`` (may be empty) and ``creator`` of the release."""
    given = (manifest.get("config") or {}).get("publication") or {}
    return {"url": given.get("url") or "", "creator": given.get("creator") or DEFAULT_CREATOR}


def _bibtex_key(version: str) -> str:
    return "ehrrobustgym_" + "".join(c if c.isalnum() else "_" for c in version)


def benchmark_bibtex(manifest: dict) -> str:
    """BibTeX of this release of the benchmark (version, source fingerprint, and the URL when given)."""
    pub = publication(manifest)
    lines = [f"@misc{{{_bibtex_key(manifest['version'])},",
             f"  author = {{{{{pub['creator']}}}}},",
             f"  title = {{{{{TITLE}}}}},",
             f"  year = {{{manifest['created'][:4]}}},",
             f"  version = {{{manifest['version']}}},",
             f"  note = {{Release {manifest['version']}, built on source fingerprint "
             f"{manifest['source']['fingerprint'][:12]}}}"]
    if pub["url"]:
        lines[-1] += ","
        lines.append(f"  url = {{{pub['url']}}}")
    return "\n".join(lines) + "\n}"


def source_bibtex(terms: SourceTerms) -> str:
    """BibTeX of the source data ("" for the synthetic source, which has nothing to cite)."""
    return SOURCE_BIBTEX[terms.name]

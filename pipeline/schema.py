"""The MIMIC-IV schema, written once.

Every MIMIC-IV table the project knows is declared here: its module (``hosp`` or ``icu``), its
columns with DuckDB types, its natural key, which columns link it to ``patients``,
``admissions`` and ``icustays``, and which other columns name rows elsewhere (item ids, ICD codes,
orders, providers). The loader, its integrity check, the synthetic generator and the source data
contracts all derive from this module, so the schema cannot drift between them.

The column set is MIMIC-IV v2.2 (the version of the open demo). v3.x keeps the same 31 tables in
the same two modules; known differences are recorded per table in ``v3_notes``. The loader matches
headers case-insensitively and reports any column it does not know by name, so a v3.x file with an
added or renamed column fails with a message naming it rather than loading shifted data.

Every loaded table also carries ``row_id`` (see ``ROW_ID``): the row's 0-based position in its
source file. It is stable across rebuilds of the same input and is how noise patches address rows.
"""

from dataclasses import dataclass, field
from enum import StrEnum

SCHEMA_VERSION = "mimic-iv-2.2"
ROW_ID = "row_id"


class Module(StrEnum):
    HOSP = "hosp"
    ICU = "icu"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # a DuckDB type name
    nullable: bool = True
    # The header spelling when PhysioNet's file differs from the column name (case, for example).
    header: str | None = None


@dataclass(frozen=True)
class Reference:
    """Columns whose values name a row of another table: a foreign key MIMIC-IV does not enforce
    (a NULL names nothing). ``pipeline.integrity`` counts the values that name no row."""

    columns: tuple[str, ...]
    table: str
    target_columns: tuple[str, ...]

    def __str__(self) -> str:
        return f"({', '.join(self.columns)}) -> {self.table}({', '.join(self.target_columns)})"


def ref(columns: str, target: str) -> Reference:
    """``ref("itemid", "d_items.itemid")``; several columns are comma-separated on both sides."""
    table_name, _, target_columns = target.partition(".")
    return Reference(tuple(c.strip() for c in columns.split(",")), table_name,
                     tuple(c.strip() for c in target_columns.split(",")))


@dataclass(frozen=True)
class Table:
    name: str
    module: Module
    columns: tuple[Column, ...]
    # Natural key: the columns that identify a row in MIMIC-IV (empty where the table has none).
    key: tuple[str, ...] = ()
    # Which of our columns hold a subject_id / hadm_id / stay_id (links to patients/admissions/icustays).
    links: dict[str, str] = field(default_factory=dict)
    # Other columns naming rows elsewhere: dictionary codes, orders, providers (``links`` are not repeated).
    references: tuple[Reference, ...] = ()
    # Dictionary tables describe codes; they have no patient rows.
    dictionary: bool = False
    v3_notes: str = ""

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def relpath(self) -> str:
        return f"{self.module}/{self.name}.csv.gz"

    @property
    def all_references(self) -> tuple[Reference, ...]:
        """``links`` (other than to the table itself) followed by ``references``."""
        own = tuple(Reference((c,), target, (c,)) for c, target in self.links.items() if target != self.name)
        return own + self.references

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name!r} has no column {name!r}")


def _cols(spec: str) -> tuple[Column, ...]:
    """Parse 'name TYPE [NOT NULL]' lines; a trailing '@Header' gives the file's spelling."""
    out = []
    for line in spec.strip().splitlines():
        line = line.strip().rstrip(",")
        if not line:
            continue
        header = None
        if "@" in line:
            line, header = (part.strip() for part in line.split("@", 1))
        name, rest = line.split(None, 1)
        nullable = not rest.upper().endswith("NOT NULL")
        type_ = rest[: -len("NOT NULL")].strip() if not nullable else rest.strip()
        out.append(Column(name, type_, nullable, header))
    return tuple(out)


SUBJECT = {"subject_id": "patients"}
SUBJECT_HADM = {"subject_id": "patients", "hadm_id": "admissions"}
SUBJECT_HADM_STAY = {"subject_id": "patients", "hadm_id": "admissions", "stay_id": "icustays"}

# ICU event tables name an item of d_items and the caregiver who charted it.
ICU_EVENT_REFERENCES = (ref("itemid", "d_items.itemid"), ref("caregiver_id", "caregiver.caregiver_id"))

H, I = Module.HOSP, Module.ICU

TABLES: tuple[Table, ...] = (
    # ---------------------------------------------------------------- hosp
    Table("patients", H, _cols("""
        subject_id INTEGER NOT NULL
        gender VARCHAR NOT NULL
        anchor_age SMALLINT
        anchor_year SMALLINT NOT NULL
        anchor_year_group VARCHAR NOT NULL
        dod DATE
    """), key=("subject_id",), links={"subject_id": "patients"}),
    Table("admissions", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        admittime TIMESTAMP NOT NULL
        dischtime TIMESTAMP
        deathtime TIMESTAMP
        admission_type VARCHAR NOT NULL
        admit_provider_id VARCHAR
        admission_location VARCHAR
        discharge_location VARCHAR
        insurance VARCHAR
        language VARCHAR
        marital_status VARCHAR
        race VARCHAR
        edregtime TIMESTAMP
        edouttime TIMESTAMP
        hospital_expire_flag SMALLINT
    """), key=("hadm_id",), links=SUBJECT_HADM,
        references=(ref("admit_provider_id", "provider.provider_id"),)),
    Table("transfers", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER
        transfer_id INTEGER NOT NULL
        eventtype VARCHAR
        careunit VARCHAR
        intime TIMESTAMP
        outtime TIMESTAMP
    """), key=("transfer_id",), links=SUBJECT_HADM),
    Table("services", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        transfertime TIMESTAMP NOT NULL
        prev_service VARCHAR
        curr_service VARCHAR
    """), key=("hadm_id", "transfertime", "curr_service"), links=SUBJECT_HADM),
    Table("provider", H, _cols("""
        provider_id VARCHAR NOT NULL
    """), key=("provider_id",), dictionary=True),
    Table("d_hcpcs", H, _cols("""
        code VARCHAR NOT NULL
        category SMALLINT
        long_description VARCHAR
        short_description VARCHAR
    """), key=("code",), dictionary=True),
    Table("d_icd_diagnoses", H, _cols("""
        icd_code VARCHAR NOT NULL
        icd_version SMALLINT NOT NULL
        long_title VARCHAR
    """), key=("icd_code", "icd_version"), dictionary=True),
    Table("d_icd_procedures", H, _cols("""
        icd_code VARCHAR NOT NULL
        icd_version SMALLINT NOT NULL
        long_title VARCHAR
    """), key=("icd_code", "icd_version"), dictionary=True),
    Table("d_labitems", H, _cols("""
        itemid INTEGER NOT NULL
        label VARCHAR
        fluid VARCHAR
        category VARCHAR
    """), key=("itemid",), dictionary=True),
    Table("diagnoses_icd", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        seq_num INTEGER NOT NULL
        icd_code VARCHAR
        icd_version SMALLINT
    """), key=("hadm_id", "seq_num"), links=SUBJECT_HADM,
        references=(ref("icd_code, icd_version", "d_icd_diagnoses.icd_code, icd_version"),)),
    Table("procedures_icd", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        seq_num INTEGER NOT NULL
        chartdate DATE NOT NULL
        icd_code VARCHAR
        icd_version SMALLINT
    """), key=("hadm_id", "seq_num"), links=SUBJECT_HADM,
        references=(ref("icd_code, icd_version", "d_icd_procedures.icd_code, icd_version"),)),
    Table("drgcodes", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        drg_type VARCHAR
        drg_code VARCHAR NOT NULL
        description VARCHAR
        drg_severity SMALLINT
        drg_mortality SMALLINT
    """), key=("hadm_id", "drg_type", "drg_code"), links=SUBJECT_HADM),
    Table("hcpcsevents", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        chartdate DATE NOT NULL
        hcpcs_cd VARCHAR NOT NULL
        seq_num INTEGER NOT NULL
        short_description VARCHAR
    """), key=("hadm_id", "seq_num"), links=SUBJECT_HADM, references=(ref("hcpcs_cd", "d_hcpcs.code"),)),
    Table("labevents", H, _cols("""
        labevent_id INTEGER NOT NULL
        subject_id INTEGER NOT NULL
        hadm_id INTEGER
        specimen_id INTEGER NOT NULL
        itemid INTEGER NOT NULL
        order_provider_id VARCHAR
        charttime TIMESTAMP
        storetime TIMESTAMP
        value VARCHAR
        valuenum DOUBLE
        valueuom VARCHAR
        ref_range_lower DOUBLE
        ref_range_upper DOUBLE
        flag VARCHAR
        priority VARCHAR
        comments VARCHAR
    """), key=("labevent_id",), links=SUBJECT_HADM,
        references=(ref("itemid", "d_labitems.itemid"), ref("order_provider_id", "provider.provider_id"))),
    Table("microbiologyevents", H, _cols("""
        microevent_id INTEGER NOT NULL
        subject_id INTEGER NOT NULL
        hadm_id INTEGER
        micro_specimen_id INTEGER NOT NULL
        order_provider_id VARCHAR
        chartdate TIMESTAMP NOT NULL
        charttime TIMESTAMP
        spec_itemid INTEGER NOT NULL
        spec_type_desc VARCHAR
        test_seq INTEGER NOT NULL
        storedate TIMESTAMP
        storetime TIMESTAMP
        test_itemid INTEGER
        test_name VARCHAR
        org_itemid INTEGER
        org_name VARCHAR
        isolate_num SMALLINT
        quantity VARCHAR
        ab_itemid INTEGER
        ab_name VARCHAR
        dilution_text VARCHAR
        dilution_comparison VARCHAR
        dilution_value DOUBLE
        interpretation VARCHAR
        comments VARCHAR
    """), key=("microevent_id",), links=SUBJECT_HADM,
        references=(ref("order_provider_id", "provider.provider_id"),)),
    Table("omr", H, _cols("""
        subject_id INTEGER NOT NULL
        chartdate DATE NOT NULL
        seq_num INTEGER NOT NULL
        result_name VARCHAR NOT NULL
        result_value VARCHAR NOT NULL
    """), key=("subject_id", "chartdate", "seq_num", "result_name"), links=SUBJECT),
    Table("pharmacy", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        pharmacy_id INTEGER NOT NULL
        poe_id VARCHAR
        starttime TIMESTAMP
        stoptime TIMESTAMP
        medication VARCHAR
        proc_type VARCHAR NOT NULL
        status VARCHAR
        entertime TIMESTAMP NOT NULL
        verifiedtime TIMESTAMP
        route VARCHAR
        frequency VARCHAR
        disp_sched VARCHAR
        infusion_type VARCHAR
        sliding_scale VARCHAR
        lockout_interval VARCHAR
        basal_rate REAL
        one_hr_max VARCHAR
        doses_per_24_hrs REAL
        duration REAL
        duration_interval VARCHAR
        expiration_value INTEGER
        expiration_unit VARCHAR
        expirationdate TIMESTAMP
        dispensation VARCHAR
        fill_quantity VARCHAR
    """), key=("pharmacy_id",), links=SUBJECT_HADM, references=(ref("poe_id", "poe.poe_id"),)),
    Table("prescriptions", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        pharmacy_id INTEGER NOT NULL
        poe_id VARCHAR
        poe_seq INTEGER
        order_provider_id VARCHAR
        starttime TIMESTAMP
        stoptime TIMESTAMP
        drug_type VARCHAR NOT NULL
        drug VARCHAR
        formulary_drug_cd VARCHAR
        gsn VARCHAR
        ndc VARCHAR
        prod_strength VARCHAR
        form_rx VARCHAR
        dose_val_rx VARCHAR
        dose_unit_rx VARCHAR
        form_val_disp VARCHAR
        form_unit_disp VARCHAR
        doses_per_24_hrs REAL
        route VARCHAR
    """), key=("pharmacy_id", "drug"), links=SUBJECT_HADM,
        references=(ref("pharmacy_id", "pharmacy.pharmacy_id"), ref("poe_id", "poe.poe_id"),
                    ref("order_provider_id", "provider.provider_id"))),
    Table("emar", H, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER
        emar_id VARCHAR NOT NULL
        emar_seq INTEGER NOT NULL
        poe_id VARCHAR NOT NULL
        pharmacy_id INTEGER
        enter_provider_id VARCHAR
        charttime TIMESTAMP NOT NULL
        medication VARCHAR
        event_txt VARCHAR
        scheduletime TIMESTAMP
        storetime TIMESTAMP NOT NULL
    """), key=("emar_id",), links=SUBJECT_HADM,
        references=(ref("poe_id", "poe.poe_id"), ref("pharmacy_id", "pharmacy.pharmacy_id"),
                    ref("enter_provider_id", "provider.provider_id"))),
    Table("emar_detail", H, _cols("""
        subject_id INTEGER NOT NULL
        emar_id VARCHAR NOT NULL
        emar_seq INTEGER NOT NULL
        parent_field_ordinal VARCHAR
        administration_type VARCHAR
        pharmacy_id INTEGER
        barcode_type VARCHAR
        reason_for_no_barcode VARCHAR
        complete_dose_not_given VARCHAR
        dose_due VARCHAR
        dose_due_unit VARCHAR
        dose_given VARCHAR
        dose_given_unit VARCHAR
        will_remainder_of_dose_be_given VARCHAR
        product_amount_given VARCHAR
        product_unit VARCHAR
        product_code VARCHAR
        product_description VARCHAR
        product_description_other VARCHAR
        prior_infusion_rate VARCHAR
        infusion_rate VARCHAR
        infusion_rate_adjustment VARCHAR
        infusion_rate_adjustment_amount VARCHAR
        infusion_rate_unit VARCHAR
        route VARCHAR
        infusion_complete VARCHAR
        completion_interval VARCHAR
        new_iv_bag_hung VARCHAR
        continued_infusion_in_other_location VARCHAR
        restart_interval VARCHAR
        side VARCHAR
        site VARCHAR
        non_formulary_visual_verification VARCHAR
    """), key=("emar_id", "parent_field_ordinal"), links=SUBJECT,
        references=(ref("emar_id", "emar.emar_id"), ref("pharmacy_id", "pharmacy.pharmacy_id"))),
    Table("poe", H, _cols("""
        poe_id VARCHAR NOT NULL
        poe_seq INTEGER NOT NULL
        subject_id INTEGER NOT NULL
        hadm_id INTEGER
        ordertime TIMESTAMP NOT NULL
        order_type VARCHAR NOT NULL
        order_subtype VARCHAR
        transaction_type VARCHAR
        discontinue_of_poe_id VARCHAR
        discontinued_by_poe_id VARCHAR
        order_provider_id VARCHAR
        order_status VARCHAR
    """), key=("poe_id",), links=SUBJECT_HADM,
        references=(ref("order_provider_id", "provider.provider_id"),)),
    Table("poe_detail", H, _cols("""
        poe_id VARCHAR NOT NULL
        poe_seq INTEGER NOT NULL
        subject_id INTEGER NOT NULL
        field_name VARCHAR NOT NULL
        field_value VARCHAR
    """), key=("poe_id", "field_name"), links=SUBJECT, references=(ref("poe_id", "poe.poe_id"),)),
    # ---------------------------------------------------------------- icu
    Table("caregiver", I, _cols("""
        caregiver_id INTEGER NOT NULL
    """), key=("caregiver_id",), dictionary=True),
    Table("d_items", I, _cols("""
        itemid INTEGER NOT NULL
        label VARCHAR NOT NULL
        abbreviation VARCHAR NOT NULL
        linksto VARCHAR NOT NULL
        category VARCHAR NOT NULL
        unitname VARCHAR
        param_type VARCHAR NOT NULL
        lownormalvalue DOUBLE
        highnormalvalue DOUBLE
    """), key=("itemid",), dictionary=True),
    Table("icustays", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER NOT NULL
        first_careunit VARCHAR
        last_careunit VARCHAR
        intime TIMESTAMP
        outtime TIMESTAMP
        los DOUBLE
    """), key=("stay_id",), links=SUBJECT_HADM_STAY),
    Table("chartevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER NOT NULL
        caregiver_id INTEGER
        charttime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        value VARCHAR
        valuenum DOUBLE
        valueuom VARCHAR
        warning SMALLINT
    """), key=("stay_id", "charttime", "itemid"), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES),
    Table("datetimeevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER NOT NULL
        caregiver_id INTEGER
        charttime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        value TIMESTAMP NOT NULL
        valueuom VARCHAR
        warning SMALLINT
    """), key=("stay_id", "charttime", "itemid"), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES),
    Table("inputevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER
        caregiver_id INTEGER
        starttime TIMESTAMP NOT NULL
        endtime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        amount DOUBLE
        amountuom VARCHAR
        rate DOUBLE
        rateuom VARCHAR
        orderid INTEGER NOT NULL
        linkorderid INTEGER
        ordercategoryname VARCHAR
        secondaryordercategoryname VARCHAR
        ordercomponenttypedescription VARCHAR
        ordercategorydescription VARCHAR
        patientweight DOUBLE
        totalamount DOUBLE
        totalamountuom VARCHAR
        isopenbag SMALLINT
        continueinnextdept SMALLINT
        statusdescription VARCHAR
        originalamount DOUBLE
        originalrate DOUBLE
    """), key=("orderid", "itemid"), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES),
    Table("ingredientevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER
        caregiver_id INTEGER
        starttime TIMESTAMP NOT NULL
        endtime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        amount DOUBLE
        amountuom VARCHAR
        rate DOUBLE
        rateuom VARCHAR
        orderid INTEGER NOT NULL
        linkorderid INTEGER
        statusdescription VARCHAR
        originalamount DOUBLE
        originalrate DOUBLE
    """), key=("orderid", "itemid"), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES),
    Table("outputevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER NOT NULL
        caregiver_id INTEGER
        charttime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        value DOUBLE NOT NULL
        valueuom VARCHAR
    """), key=("stay_id", "charttime", "itemid"), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES),
    Table("procedureevents", I, _cols("""
        subject_id INTEGER NOT NULL
        hadm_id INTEGER NOT NULL
        stay_id INTEGER NOT NULL
        caregiver_id INTEGER
        starttime TIMESTAMP NOT NULL
        endtime TIMESTAMP NOT NULL
        storetime TIMESTAMP
        itemid INTEGER NOT NULL
        value DOUBLE
        valueuom VARCHAR
        location VARCHAR
        locationcategory VARCHAR
        orderid INTEGER
        linkorderid INTEGER
        ordercategoryname VARCHAR
        ordercategorydescription VARCHAR
        patientweight DOUBLE
        isopenbag SMALLINT
        continueinnextdept SMALLINT
        statusdescription VARCHAR
        originalamount DOUBLE @ORIGINALAMOUNT
        originalrate DOUBLE @ORIGINALRATE
    """), key=("orderid",), links=SUBJECT_HADM_STAY, references=ICU_EVENT_REFERENCES,
        v3_notes="v3.x header spells originalamount/originalrate in lower case."),
)

TABLES_BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}
assert len(TABLES_BY_NAME) == len(TABLES) == 31, "MIMIC-IV v2.2 has 31 tables in hosp/ and icu/"


def table(name: str) -> Table:
    try:
        return TABLES_BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not a MIMIC-IV table; known: {', '.join(sorted(TABLES_BY_NAME))}") from None


def duckdb_columns(t: Table) -> dict[str, str]:
    """The ``columns=`` mapping for DuckDB's ``read_csv``, keyed by the file's header spelling."""
    return {(c.header or c.name): c.type for c in t.columns}


def create_table_sql(t: Table, name: str | None = None) -> str:
    """DDL for the table as loaded: ``row_id`` first, then the MIMIC-IV columns."""
    cols = [f"{ROW_ID} BIGINT NOT NULL"] + [
        f'"{c.name}" {c.type}' + ("" if c.nullable else " NOT NULL") for c in t.columns
    ]
    return f'CREATE TABLE "{name or t.name}" (\n  ' + ",\n  ".join(cols) + "\n)"

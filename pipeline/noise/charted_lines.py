"""Lines and catheters the ICU charts twice: placed, as a ``procedureevents`` item ("20 Gauge"), and
dated, as a ``datetimeevents`` item of the same name ("20 Gauge Insertion Date"), whose ``value`` is
the time the line went in.

An insertion date shows that the line was placed, and when: a placement hidden from procedureevents
as missing evidence still shows there (on the demo, 218 of the 1,468 procedureevents rows have an
insertion date of the same stay and time). It records nothing of how long the line stayed or where
it went, so it settles no question about those.

MIMIC-IV ships no such map; this one pairs each procedureevents item with the datetimeevents item
named like it plus " Insertion Date" (``d_items``, case aside: 22 pairs) and the Foley catheter, whose
date is charted as "Foley Cath Insertion Date".
"""

# procedureevents itemid -> the datetimeevents itemids dating its insertion.
INSERTION_DATED_AS: dict[int, tuple[int, ...]] = {
    224263: (224280,),  # Multi Lumen
    224264: (224184,),  # PICC Line
    224267: (224296,),  # Cordis/Introducer
    224268: (225317,),  # Trauma line
    224269: (225316,),  # CCO PAC
    224270: (225322,),  # Dialysis Catheter
    224273: (225386,),  # Presep Catheter
    224274: (225753,),  # 22 Gauge
    224275: (225754,),  # 20 Gauge
    224276: (225756,),  # 16 Gauge
    224277: (225755,),  # 18 Gauge
    224560: (225354,),  # PA Catheter
    224566: (225757,),  # 14 Gauge
    225199: (225394,),  # Triple Introducer
    225202: (225378,),  # Indwelling Port (PortaCath)
    225203: (225370,),  # Pheresis Catheter
    225204: (225346,),  # Midline
    225205: (225758,),  # RIC
    225752: (224288,),  # Arterial Line: "Arterial line Insertion Date"
    227719: (227724,),  # AVA
    229351: (229352,),  # Foley Catheter: "Foley Cath Insertion Date"
    229468: (229471,),  # 24 Gauge
    229514: (229541,),  # EKOS
}

# datetimeevents itemid -> the procedureevents itemids of the line it dates.
DATES_INSERTION_OF: dict[int, tuple[int, ...]] = {
    dated: tuple(sorted(p for p, dates in INSERTION_DATED_AS.items() if dated in dates))
    for dated in sorted({d for dates in INSERTION_DATED_AS.values() for d in dates})
}

"""Fixed vocabularies the CRM world draws from: people, companies, places, products and regions."""

from __future__ import annotations

FIRST = ("Ada", "Bruno", "Carla", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kofi", "Lena",
         "Malik", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wen", "Yara")
"""First names of contacts and users."""

LAST = ("Abbott", "Becker", "Castro", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ivanova", "Jensen",
        "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okoro", "Petrov", "Rossi", "Silva", "Tanaka", "Varga",
        "Wagner", "Yilmaz", "Zhou", "Andersen", "Brandt", "Costa", "Dahl", "Engel", "Ferreira", "Grant",
        "Holm", "Ito", "Keller", "Lopez", "Mendes", "Novak", "Ortiz", "Park", "Quist", "Reyes")
"""Last names of contacts and users."""

COMPANY_STEMS = ("Northwind", "Contoso", "Fabrikam", "Globex", "Initech", "Umbrella", "Tyrell", "Cyberdyne",
                 "Aperture", "Vandelay", "Soylent", "Hooli", "Wonka", "Oscorp", "Gringotts", "Stark", "Wayne",
                 "Acme", "Blue Harbor", "Red Maple", "Silver Creek", "Ironwood", "Sunpeak", "Greenfield")
"""First words of company names."""

COMPANY_KINDS = ("Traders", "Logistics", "Foods", "Systems", "Health", "Labs", "Energy", "Media", "Partners",
                 "Holdings", "Robotics", "Outfitters", "Analytics", "Textiles", "Pharma", "Airways")
"""Second words of company names."""

LEGAL_SUFFIXES = (" Inc", " Ltd", " GmbH", " LLC")
"""Suffixes a near-duplicate account may carry after its twin's name."""

INDUSTRIES = ("manufacturing", "retail", "healthcare", "software", "logistics", "energy", "media", "finance")
"""Account industries."""

TERRITORIES = (
    ("TER-11", "NA West", ("Seattle", "Denver", "Phoenix"), "USD", "1"),
    ("TER-12", "NA East", ("Boston", "Atlanta", "Toronto"), "USD", "1"),
    ("TER-21", "EMEA North", ("Hamburg", "Oslo", "Aarhus"), "EUR", "49"),
    ("TER-22", "EMEA South", ("Lyon", "Porto", "Milan"), "EUR", "33"),
    ("TER-31", "UK and Ireland", ("Bristol", "Dublin", "York"), "GBP", "44"),
)
"""Territories: id, name, cities, currency and phone country code."""

MANAGERS = ("Dana Okafor", "Luis Almeida", "Mei Lindgren", "Ruth Adeyemi", "Tomas Novak")
"""One sales manager per territory, in the order of ``TERRITORIES``."""

FIXED_REPS = ("Morgan Reyes", "Sam Whitaker", "Alex Brennan", "Jordan Pike", "Casey Morrow")
"""The first rep of each territory: the same names for every seed (the default persona is the first)."""

PRODUCTS = (
    ("PRD-501", "CRM Seats (annual)", "subscription", 1200.0),
    ("PRD-502", "Analytics Add-on", "subscription", 4800.0),
    ("PRD-503", "Support Premium", "support", 6000.0),
    ("PRD-504", "Onboarding Package", "services", 9500.0),
    ("PRD-505", "Data Migration", "services", 14000.0),
    ("PRD-506", "API Access Tier", "subscription", 3600.0),
    ("PRD-507", "Training Day", "services", 2200.0),
    ("PRD-508", "Sandbox Environment", "subscription", 1800.0),
)
"""Products on quotes: id, name, family, list price."""

OPEN_STAGES = ("prospecting", "qualification", "proposal", "negotiation")
"""Stages of an open opportunity, in order."""

CLOSED_STAGES = ("closed_won", "closed_lost")
"""Stages of a closed opportunity."""

TITLES = ("CFO", "Head of Procurement", "IT Director", "Operations Manager", "VP Sales", "Office Manager")
"""Contact job titles."""

ACTIVITY_KINDS = ("call", "email", "meeting")
"""Kinds of logged activities."""

"""Name pools and the PC-components catalog of the helpdesk world."""

from __future__ import annotations

import random
from dataclasses import dataclass

FIRST_NAMES = (
    "Amelia", "Liam", "Olivia", "Noah", "Emma", "Lucas", "Mia", "Elias", "Hannah", "Mateo", "Chloe", "Felix",
    "Ines", "Hugo", "Leonie", "Oscar", "Freya", "Arjun", "Priya", "Tomasz", "Agnes", "Rafael", "Yuki", "Kofi",
    "Nadia", "Marek", "Ingrid", "Diego", "Selin", "Bram", "Clara", "Emil", "Lotte", "Jonas", "Maren", "Theo",
    "Valentina", "Ravi", "Sofia", "Malik", "Greta", "Pablo", "Elif", "Anton", "Zara", "Finn", "Lena", "Omar",
)
LAST_NAMES = (
    "Garcia", "Novak", "Jensen", "Okafor", "Rossi", "Dubois", "Hughes", "Bauer", "Lindqvist", "Moreau", "Patel",
    "Tanaka", "Kowalczyk", "Fischer", "Silva", "Ahmed", "Van Dijk", "Larsen", "Mendes", "Costa", "Walsh",
    "Schneider", "Horvat", "Nakamura", "Byrne", "Romero", "Wagner", "Haddad", "Eriksen", "Kaur", "Lambert",
    "Petrov", "Vogel", "Marsh", "Duarte", "Sato", "Brennan", "Aalto", "Berg", "Conti",
)
NEAR_DUPLICATES = (
    (("Jon", "John"), ("Smith", "Smyth")),
    (("Catherine", "Katherine"), ("Reid", "Reed")),
    (("Sara", "Sarah"), ("Meyer", "Meier")),
    (("Steven", "Stephen"), ("Thompson", "Thomson")),
    (("Mohammed", "Muhammad"), ("Khan", "Kahn")),
    (("Ann", "Anne"), ("Gray", "Grey")),
    (("Erik", "Eric"), ("Nielsen", "Nilsen")),
    (("Zoe", "Zoey"), ("Clarke", "Clark")),
    (("Geoff", "Jeff"), ("Kowalski", "Kowalsky")),
    (("Aleksandr", "Alexander"), ("Ivanov", "Ivanoff")),
    (("Isabel", "Isabelle"), ("Martin", "Martins")),
    (("Phillip", "Philip"), ("Lee", "Li")),
)
"""(first name and its variant, last name and its variant) of each near-duplicate cluster."""

COUNTRIES = (
    ("US", "USD", ("Austin", "Denver", "Portland", "Chicago", "Boston", "Seattle", "Atlanta", "Phoenix")),
    ("GB", "GBP", ("Leeds", "Bristol", "Manchester", "Glasgow", "Cardiff", "Norwich", "York")),
    ("DE", "EUR", ("Berlin", "Hamburg", "Munich", "Cologne", "Leipzig", "Dresden")),
    ("FR", "EUR", ("Lyon", "Lille", "Nantes", "Bordeaux", "Toulouse")),
    ("NL", "EUR", ("Utrecht", "Rotterdam", "Eindhoven", "Groningen")),
)
COUNTRY_WEIGHTS = (45, 20, 15, 10, 10)
STREETS = ("Maple Street", "Station Road", "Linden Allee", "Rue Victor Hugo", "Kade", "Harbour Way", "Mill Lane",
           "Park Avenue", "Hauptstrasse", "Canal Street", "Orchard Row", "Bridge Street")
EMAIL_DOMAINS = ("mailbox.test", "post.test", "inbox.test", "webmail.test")

STAFF = (
    ("STF-01", "Sam Rivera", "agent"), ("STF-02", "Priya Natarajan", "agent"), ("STF-03", "Lukas Brandt", "agent"),
    ("STF-04", "Chloe Martin", "agent"), ("STF-05", "Kwame Mensah", "agent"), ("STF-06", "Ines Duarte", "agent"),
    ("STF-07", "Dana Okafor", "manager"), ("STF-08", "Henrik Dahl", "manager"),
)
CARRIERS = (
    ("CAR-01", "Parcelline", "PLN", "standard", "https://track.parcelline.test/{}"),
    ("CAR-02", "SwiftPost Express", "SPX", "express", "https://swiftpost.test/t/{}"),
    ("CAR-03", "EuroFreight", "EFR", "standard", "https://eurofreight.test/track?id={}"),
    ("CAR-04", "Northwind Couriers", "NWC", "next_day", "https://northwind.test/{}"),
    ("CAR-05", "Blue Harbor Logistics", "BHL", "economy", "https://blueharbor.test/parcel/{}"),
)


@dataclass(frozen=True)
class ProductSpec:
    """One catalog product before it gets an id."""

    name: str
    brand: str
    category: str
    price_usd: float
    socket: str | None = None
    form_factor: str | None = None
    memory_type: str | None = None
    wattage: int | None = None
    tdp: int | None = None


_SOCKET_CHIPSETS = {
    "AM5": (("B650", "DDR5"), ("X670E", "DDR5"), ("B850", "DDR5"), ("X870", "DDR5")),
    "AM4": (("B550", "DDR4"), ("X570", "DDR4"), ("A520", "DDR4")),
    "LGA1700": (("B760", "DDR5"), ("Z790", "DDR5"), ("B760", "DDR4")),
    "LGA1851": (("Z890", "DDR5"), ("B860", "DDR5")),
}
_BOARD_LINES = (
    ("ASUS", "TUF GAMING {c}-PLUS", "ATX"), ("MSI", "{c} TOMAHAWK", "ATX"), ("Gigabyte", "{c} AORUS ELITE", "ATX"),
    ("ASRock", "{c}M PRO RS", "mATX"), ("MSI", "PRO {c}M-A", "mATX"), ("ASUS", "ROG STRIX {c}-I", "ITX"),
)
_CPUS = (
    ("AMD", "Ryzen 5 7600X", "AM5", 105, 229.0), ("AMD", "Ryzen 7 7700X", "AM5", 105, 329.0),
    ("AMD", "Ryzen 7 7800X3D", "AM5", 120, 449.0), ("AMD", "Ryzen 9 7900X", "AM5", 170, 429.0),
    ("AMD", "Ryzen 9 7950X", "AM5", 170, 579.0), ("AMD", "Ryzen 5 9600X", "AM5", 65, 279.0),
    ("AMD", "Ryzen 7 9700X", "AM5", 65, 359.0), ("AMD", "Ryzen 9 9950X", "AM5", 170, 649.0),
    ("AMD", "Ryzen 5 5600X", "AM4", 65, 139.0), ("AMD", "Ryzen 7 5800X3D", "AM4", 105, 299.0),
    ("AMD", "Ryzen 7 5700X", "AM4", 65, 169.0), ("AMD", "Ryzen 9 5900X", "AM4", 105, 279.0),
    ("Intel", "Core i5-13400F", "LGA1700", 65, 189.0), ("Intel", "Core i5-14600K", "LGA1700", 125, 299.0),
    ("Intel", "Core i7-14700K", "LGA1700", 125, 399.0), ("Intel", "Core i9-14900K", "LGA1700", 125, 549.0),
    ("Intel", "Core Ultra 5 245K", "LGA1851", 125, 309.0), ("Intel", "Core Ultra 7 265K", "LGA1851", 125, 394.0),
    ("Intel", "Core Ultra 9 285K", "LGA1851", 125, 589.0),
)
_GPUS = (
    ("RTX 4060", 115, 299.0), ("RTX 4060 Ti", 160, 399.0), ("RTX 4070", 200, 549.0), ("RTX 4070 Ti SUPER", 285, 799.0),
    ("RTX 4080 SUPER", 320, 999.0), ("RTX 4090", 450, 1799.0), ("RTX 5070", 250, 599.0), ("RTX 5080", 360, 1099.0),
    ("RX 7600", 165, 269.0), ("RX 7800 XT", 263, 499.0), ("RX 7900 XT", 315, 699.0), ("RX 7900 XTX", 355, 949.0),
    ("RX 9070 XT", 304, 649.0),
)
_GPU_LINES = (("ASUS", "Dual"), ("MSI", "Gaming X"), ("Gigabyte", "Windforce"), ("Sapphire", "Pulse"),
              ("PowerColor", "Hellhound"), ("Zotac", "Twin Edge"))
_PSUS = (("Corsair", "RM{w}x"), ("Seasonic", "Focus GX-{w}"), ("be quiet!", "Pure Power 12 M {w}W"),
         ("Cooler Master", "MWE Gold {w} V2"))
_CASES = (
    ("Fractal", "North", "ATX", 139.0), ("NZXT", "H5 Flow", "ATX", 94.0), ("Lian Li", "O11 Dynamic EVO", "ATX", 169.0),
    ("Corsair", "4000D Airflow", "ATX", 104.0), ("Cooler Master", "NR200P", "ITX", 99.0),
    ("Fractal", "Terra", "ITX", 179.0), ("Lian Li", "A3-mATX", "mATX", 79.0), ("Jonsbo", "D31 Mesh", "mATX", 85.0),
    ("be quiet!", "Pure Base 500DX", "ATX", 109.0), ("Phanteks", "XT Pro", "ATX", 69.0),
)
_RAMS = (("Corsair", "Vengeance"), ("G.Skill", "Trident Z5"), ("Kingston", "Fury Beast"), ("Crucial", "Pro"))
_SSDS = (("Samsung", "990 Pro"), ("WD", "Black SN850X"), ("Crucial", "T500"), ("Kingston", "KC3000"),
         ("Seagate", "FireCuda 530"))
_COOLERS = (("Noctua", "NH-D15 G2", "AM4,AM5,LGA1700,LGA1851", 149.0), ("Thermalright", "Peerless Assassin 120",
            "AM4,AM5,LGA1700", 39.0), ("Arctic", "Liquid Freezer III 360", "AM4,AM5,LGA1700,LGA1851", 119.0),
            ("be quiet!", "Dark Rock 5", "AM4,AM5,LGA1700", 79.0), ("DeepCool", "AK400", "AM4,AM5,LGA1700", 34.0),
            ("Noctua", "NH-L9a-AM5", "AM5", 54.0))

FORM_FACTOR_SIZE = {"ITX": 1, "mATX": 2, "ATX": 3}
"""A case takes boards of its own size and smaller."""


def catalog(rng: random.Random) -> list[ProductSpec]:
    """Return the product catalog; prices vary a little with ``rng``."""
    out: list[ProductSpec] = []
    for brand, model, socket, tdp, price in _CPUS:
        out.append(ProductSpec(f"{brand} {model}", brand, "cpu", price, socket=socket, tdp=tdp))
    for socket, chipsets in _SOCKET_CHIPSETS.items():
        for chipset, memory in chipsets:
            for brand, pattern, form in _BOARD_LINES:
                if rng.random() < 0.45:
                    continue
                suffix = " DDR4" if memory == "DDR4" and socket == "LGA1700" else ""
                name = f"{brand} {pattern.format(c=chipset)}{suffix}"
                price = {"ATX": 199.0, "mATX": 149.0, "ITX": 229.0}[form] + rng.choice((0.0, 20.0, 40.0, 80.0))
                out.append(ProductSpec(name, brand, "motherboard", price - 0.01, socket=socket, form_factor=form,
                                       memory_type=memory))
    for chip, tdp, price in _GPUS:
        for brand, line in rng.sample(_GPU_LINES, 3):
            out.append(ProductSpec(f"{brand} {chip} {line}", brand, "gpu", price + rng.choice((0.0, 20.0, 50.0)),
                                   tdp=tdp))
    for brand, pattern in _PSUS:
        for watts in (650, 750, 850, 1000, 1200):
            price = 69.0 + (watts - 650) * 0.22
            out.append(ProductSpec(f"{brand} {pattern.format(w=watts)}", brand, "psu", round(price, 2) + 0.99,
                                   wattage=watts))
    for brand, model, form, price in _CASES:
        out.append(ProductSpec(f"{brand} {model}", brand, "case", price, form_factor=form))
    for brand, line in _RAMS:
        for memory, sizes in (("DDR4", ("16GB", "32GB")), ("DDR5", ("32GB", "64GB"))):
            for size in sizes:
                price = {"16GB": 44.99, "32GB": 89.99 if memory == "DDR4" else 104.99, "64GB": 189.99}[size]
                out.append(ProductSpec(f"{brand} {line} {memory} {size}", brand, "memory", price, memory_type=memory))
    for brand, model in _SSDS:
        for size, price in (("1TB", 89.99), ("2TB", 159.99), ("4TB", 299.99)):
            out.append(ProductSpec(f"{brand} {model} {size}", brand, "storage", price))
    for brand, model, sockets, price in _COOLERS:
        out.append(ProductSpec(f"{brand} {model}", brand, "cooler", price, socket=sockets))
    return out

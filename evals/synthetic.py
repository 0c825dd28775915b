"""Synthetic but realistic short personal facts, for scale and latency benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator

_PEOPLE = [
    "my sister",
    "my brother",
    "my manager",
    "my neighbour",
    "my best friend",
    "my son",
    "my daughter",
    "my cousin",
    "my landlord",
    "my colleague",
    "my teacher",
    "my partner",
]
_NAMES = [
    "Ana",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Fatima",
    "Goro",
    "Hana",
    "Ivan",
    "Jia",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tomoko",
    "Uma",
]
_CITIES = [
    "Taipei",
    "Kaohsiung",
    "Lisbon",
    "Osaka",
    "Denver",
    "Nairobi",
    "Oslo",
    "Lima",
    "Hanoi",
    "Porto",
    "Seoul",
    "Austin",
    "Krakow",
    "Perth",
    "Quito",
    "Tainan",
]
_FOODS = [
    "ramen",
    "sourdough",
    "mango sticky rice",
    "dumplings",
    "tacos",
    "falafel",
    "pho",
    "beef noodle soup",
    "paella",
    "curry",
    "oat porridge",
    "sushi",
    "bubble tea",
]
_HOBBIES = [
    "bouldering",
    "watercolour painting",
    "trail running",
    "chess",
    "knitting",
    "birdwatching",
    "salsa dancing",
    "photography",
    "woodworking",
    "swimming",
    "go",
]
_TOOLS = [
    "Python",
    "Rust",
    "TypeScript",
    "Postgres",
    "Kubernetes",
    "pytest",
    "Vim",
    "Figma",
    "Excel",
    "Go",
    "Django",
    "React",
]
_TEMPLATES = [
    "{person} {name} lives in {city}",
    "I prefer {food} for dinner on weekdays",
    "I have been doing {hobby} every {day} for {n} years",
    "{person} {name} works as a nurse in {city}",
    "Our team uses {tool} for the billing service",
    "I am allergic to {food}",
    "I want to visit {city} in {month}",
    "{person} {name} recommended {food} at a place in {city}",
    "My {n}th wedding anniversary is in {month}",
    "I usually take the {n}:15 train to {city}",
    "I switched from {tool} to {tool2} for side projects",
    "{person} {name} is learning {hobby}",
    "My goal this year is to get better at {hobby}",
    "I keep my {tool} notes in a folder called {name}",
    "使用者住在{city_zh}，喜歡{hobby_zh}",
    "我每週{day_zh}去{hobby_zh}",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MONTHS = ["January", "March", "May", "July", "September", "November"]
_CITIES_ZH = ["台北", "高雄", "台南", "新竹", "台中", "花蓮"]
_HOBBIES_ZH = ["游泳", "爬山", "下棋", "畫畫", "跑步", "彈吉他"]
_DAYS_ZH = ["一", "二", "三", "四", "五", "六", "日"]


def synthetic_facts(count: int, seed: int = 7) -> Iterator[str]:
    """Yield ``count`` short first-person facts (about one in eight in Chinese)."""
    rng = random.Random(seed)
    for number in range(count):
        template = rng.choice(_TEMPLATES)
        tool, tool2 = rng.sample(_TOOLS, 2)
        text = template.format(
            person=rng.choice(_PEOPLE).capitalize()
            if template.startswith("{person}")
            else rng.choice(_PEOPLE),
            name=rng.choice(_NAMES),
            city=rng.choice(_CITIES),
            food=rng.choice(_FOODS),
            hobby=rng.choice(_HOBBIES),
            day=rng.choice(_DAYS),
            n=rng.randint(2, 30),
            tool=tool,
            tool2=tool2,
            month=rng.choice(_MONTHS),
            city_zh=rng.choice(_CITIES_ZH),
            hobby_zh=rng.choice(_HOBBIES_ZH),
            day_zh=rng.choice(_DAYS_ZH),
        )
        # A serial keeps facts distinct, as real stores rarely hold exact repeats.
        yield f"{text} (note {number})"


def synthetic_queries(count: int, seed: int = 11) -> list[str]:
    """Questions in the style users ask about their own facts."""
    rng = random.Random(seed)
    shapes = [
        "where does {person} live?",
        "what do I like to eat for dinner?",
        "which hobby have I been doing for years?",
        "what does our team use for billing?",
        "what am I allergic to?",
        "when do I want to visit {city}?",
        "what is {name} learning?",
        "what tools did I switch to?",
        "我住在哪裡？",
        "我每週做什麼運動？",
    ]
    return [
        rng.choice(shapes).format(
            person=rng.choice(_PEOPLE), city=rng.choice(_CITIES), name=rng.choice(_NAMES)
        )
        for _ in range(count)
    ]

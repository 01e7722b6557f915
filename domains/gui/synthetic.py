"""Seeded synthetic screenshots with exact element boxes and instructions, for offline training and tests.

Real GUI grounding data (ScreenSpot, GUI-R1-3K, AndroidControl) cannot be downloaded in CI, and a
test needs boxes it can trust to the pixel. :func:`generate_screen` draws a desktop window, a
mobile app or a web page with PIL — title/menu/tool bars, side lists, forms, buttons, links, cards,
bottom navigation, vector icons — in one of several themes, records the box of every clickable
element as it draws it, and writes an instruction for each in the styles ScreenSpot uses
("click the Save button", "open settings", "tap the search icon").

:func:`single_button_screen` is the much smaller task the tiny checkpoint learns on two CPU cores:
one button on a 112-px screen (in this project's trials a randomly initialised Qwen2.5-VL learns
single-target localisation in minutes; multi-element binding it does not).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from domains.gui.icons import ICONS, draw_icon
from zoo.data import Sample

PLATFORMS = ("desktop", "mobile", "web")
SIZES = {
    "desktop": [(1280, 800), (1440, 900), (1024, 768)],
    "mobile": [(390, 844), (360, 800), (412, 892)],
    "web": [(1366, 768), (1440, 900), (1280, 720)],
}
# name: (background, surface, text, accent, muted, border)
THEMES: dict[str, tuple[str, str, str, str, str, str]] = {
    "light": ("#f5f6f8", "#ffffff", "#1f2328", "#2f6fed", "#6e7781", "#d0d7de"),
    "dark": ("#1e1f22", "#2b2d31", "#e6e6e6", "#5865f2", "#a0a4ab", "#3f4147"),
    "ocean": ("#eaf4fb", "#ffffff", "#0b2e4f", "#0077b6", "#4d6b85", "#b9d7ea"),
    "forest": ("#eef5ee", "#ffffff", "#1b3a1b", "#2e7d32", "#557055", "#c3dcc3"),
    "sunset": ("#fff4ec", "#ffffff", "#3d1f0f", "#e8590c", "#8a5a44", "#f3d2bd"),
    "contrast": ("#000000", "#111111", "#ffffff", "#ffd400", "#cccccc", "#ffffff"),
}
MENUS = ["File", "Edit", "View", "Insert", "Format", "Tools", "Window", "Help", "Run", "Selection"]
FOLDERS = ["Documents", "Downloads", "Pictures", "Music", "Projects", "Shared", "Recent", "Archive", "Videos"]
BUTTONS = ["Save", "Cancel", "Apply", "OK", "Submit", "Export", "Open", "Delete", "Next", "Back", "Send", "Upload"]
FIELDS = ["Name", "Email", "Password", "Address", "Phone", "Username", "Company", "City", "Title"]
CHECKS = ["Remember me", "Show hidden files", "Enable sync", "Dark mode", "Notify me", "Auto-save"]
CONTACTS = [
    "Alice Martin", "Bruno Silva", "Chen Wei", "Dana Cohen", "Emma Novak", "Farid Khan", "Grace Lee", "Hugo Roy",
]  # fmt: skip
LINKS = ["Home", "Products", "Pricing", "Blog", "About", "Contact", "Docs", "Careers", "Support"]
CTAS = ["Get started", "Learn more", "Sign up", "Try it free", "Book a demo", "Download"]
TOOLBAR_ICONS = ["search", "settings", "add", "trash", "home", "star", "download", "share", "edit", "refresh", "mail"]
NAV_TABS = [("home", "Home"), ("search", "Search"), ("heart", "Favorites"), ("bell", "Alerts"), ("user", "Profile")]
TINY_LABELS = ["OK", "Go", "Save", "Send", "Next", "Buy", "Play", "Add"]
TINY_COLOURS = ["#e03131", "#2f9e44", "#1971c2", "#f08c00", "#9c36b5", "#0c8599", "#343a40", "#e64980"]

VERBS = {"desktop": "click", "web": "click", "mobile": "tap"}


@dataclass(frozen=True)
class Element:
    """One clickable element: what it shows, what it is, where it is, and how to ask for it."""

    label: str
    role: str
    ui_type: str
    bbox: tuple[int, int, int, int]
    instruction: str


@dataclass
class Screen:
    """A rendered screenshot and its elements (boxes in this image's pixels)."""

    image: Image.Image
    platform: str
    theme: str
    elements: list[Element] = field(default_factory=list)


@lru_cache(maxsize=64)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans when installed (most Linux images), else PIL's bundled default font."""
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    try:
        return ImageFont.truetype(name, size)
    except OSError:
        return ImageFont.load_default(size=size)


class _Canvas:
    """Drawing helpers that record the box of every element they draw."""

    def __init__(self, size: tuple[int, int], platform: str, theme: str, rng: random.Random) -> None:
        self.bg, self.surface, self.text, self.accent, self.muted, self.border = THEMES[theme]
        self.image = Image.new("RGB", size, self.bg)
        self.draw = ImageDraw.Draw(self.image)
        self.screen = Screen(self.image, platform, theme)
        self.rng = rng
        self.verb = VERBS[platform]

    def add(self, label: str, role: str, ui_type: str, box: tuple[float, ...], instruction: str) -> None:
        x1, y1, x2, y2 = (round(v) for v in box)
        self.screen.elements.append(Element(label, role, ui_type, (x1, y1, x2, y2), instruction))

    def text_size(self, text: str, size: int, bold: bool = False) -> tuple[int, int]:
        left, top, right, bottom = self.draw.textbbox((0, 0), text, font=font(size, bold))
        return right - left, bottom - top

    def label(
        self, xy: tuple[float, float], text: str, size: int, colour: str | None = None, bold: bool = False
    ) -> None:
        self.draw.text(xy, text, fill=colour or self.text, font=font(size, bold))

    def button(self, x: float, y: float, text: str, size: int = 14, primary: bool = False) -> float:
        """A rounded text button; returns its right edge."""
        tw, th = self.text_size(text, size)
        box = (x, y, x + tw + 2 * size, y + th + size)
        fill, ink = (self.accent, "#ffffff") if primary else (self.surface, self.text)
        self.draw.rounded_rectangle(box, radius=size // 3, fill=fill, outline=self.border)
        self.label((x + size, y + size / 2 - 1), text, size, ink)
        phrasing = self.rng.choice([f"{self.verb} the {text} button", f"press {text}", f"{self.verb} on '{text}'"])
        self.add(text, "button", "text", box, phrasing)
        return box[2]

    def icon(
        self, box: tuple[float, float, float, float], name: str, colour: str | None = None, role: str = "icon"
    ) -> None:
        draw_icon(self.draw, name, box, colour or self.text)
        noun, purpose = ICONS[name]
        phrasing = self.rng.choice([f"{self.verb} the {noun} icon", purpose, f"{self.verb} the {noun} button"])
        self.add(noun, role, "icon", box, phrasing)

    def link(self, x: float, y: float, text: str, size: int, role: str = "link") -> float:
        tw, th = self.text_size(text, size)
        self.label((x, y), text, size, self.accent if role == "link" else self.text)
        box = (x - 2, y - 2, x + tw + 2, y + th + 6)
        templates = {
            "link": [f"{self.verb} the {text} link", f"go to {text}"],
            "menu_item": [f"open the {text} menu", f"{self.verb} {text} in the menu bar"],
            "list_item": [f"select {text}", f"open {text}", f"{self.verb} on {text}"],
        }[role]
        self.add(text, role, "text", box, self.rng.choice(templates))
        return box[2]

    def field(self, x: float, y: float, w: float, name: str, size: int = 13) -> None:
        self.label((x, y), name, size, self.muted)
        box = (x, y + size + 6, x + w, y + 2 * size + 20)
        self.draw.rounded_rectangle(box, radius=4, fill=self.surface, outline=self.border)
        self.label((x + 8, y + size + 11), f"Enter {name.lower()}", size - 1, self.muted)
        templates = [f"{self.verb} the {name} field", f"{self.verb} the input box for {name}",
                     f"type in the {name} box"]  # fmt: skip
        self.add(name, "text_field", "text", box, self.rng.choice(templates))

    def checkbox(self, x: float, y: float, text: str, size: int = 13) -> None:
        self.draw.rectangle((x, y, x + size + 2, y + size + 2), outline=self.text, fill=self.surface)
        if self.rng.random() < 0.5:
            tick = (x + 3, y + size / 2, x + size / 2, y + size - 1, x + size, y + 3)
            self.draw.line(tick, fill=self.accent, width=2)
        tw, th = self.text_size(text, size)
        self.label((x + size + 8, y), text, size)
        box = (x - 2, y - 2, x + size + 10 + tw, y + max(size + 4, th + 4))
        self.add(text, "checkbox", "icon", box, self.rng.choice([f"check '{text}'", f"toggle the {text} checkbox"]))


def _desktop(c: _Canvas) -> None:
    w, h = c.image.size
    r = c.rng
    c.draw.rectangle((0, 0, w, 32), fill=c.surface)
    c.label((12, 8), r.choice(["Untitled - Editor", "Report.docx", "Inbox", "Project Manager"]), 14, bold=True)
    for i, name in enumerate(["minimize", "maximize", "close"]):
        c.icon((w - 96 + i * 32 + 8, 8, w - 96 + i * 32 + 24, 24), name)
    x = 10
    for menu in r.sample(MENUS, r.randint(4, 7)):
        x = c.link(x, 40, menu, 13, role="menu_item") + 16
    c.draw.line((0, 62, w, 62), fill=c.border)
    for i, name in enumerate(r.sample(TOOLBAR_ICONS, r.randint(5, 8))):
        c.icon((12 + i * 40, 70, 38 + i * 40, 96), name)
    c.draw.rectangle((0, 104, 200, h - 24), fill=c.surface, outline=c.border)
    for i, folder in enumerate(r.sample(FOLDERS, r.randint(4, 7))):
        c.link(20, 120 + i * 34, folder, 14, role="list_item")
    x0, y = 240, 124
    c.label((x0, y), r.choice(["Account settings", "New message", "Export options", "Preferences"]), 22, bold=True)
    for i, name in enumerate(r.sample(FIELDS, r.randint(2, 3))):
        c.field(x0, y + 50 + i * 70, min(420, w - x0 - 40), name)
    y = y + 50 + 3 * 70 + 10
    c.checkbox(x0, y, r.choice(CHECKS))
    x = x0
    for i, text in enumerate(r.sample(BUTTONS, r.randint(2, 3))):
        x = c.button(x, y + 40, text, primary=i == 0) + 14
    c.draw.rectangle((0, h - 24, w, h), fill=c.surface)
    c.label((10, h - 20), r.choice(["Ready", "Saved", "3 items selected", "Connected"]), 12, c.muted)


def _mobile(c: _Canvas) -> None:
    w, h = c.image.size
    r = c.rng
    c.label((16, 6), f"{r.randint(7, 11)}:{r.randint(0, 59):02d}", 13, bold=True)
    c.draw.rectangle((w - 40, 9, w - 16, 19), outline=c.text)
    c.draw.rectangle((0, 28, w, 84), fill=c.surface)
    c.icon((12, 44, 36, 68), "back")
    c.label((52, 44), r.choice(["Messages", "Contacts", "Shop", "Photos", "Settings"]), 19, bold=True)
    c.icon((w - 40, 44, w - 16, 68), r.choice(["more", "search", "settings"]))
    c.field(16, 96, w - 32, r.choice(["Search", "Name", "Email"]))
    y = 170
    for person in r.sample(CONTACTS, r.randint(4, 6)):
        c.draw.ellipse((16, y + 6, 52, y + 42), fill=r.choice(TINY_COLOURS))
        c.link(64, y + 6, person, 15, role="list_item")
        c.label((64, y + 28), r.choice(["Hey, are you free?", "Photo", "See you soon", "Missed call"]), 12, c.muted)
        y += 60
    c.button(16, min(y + 10, h - 190), r.choice(["Continue", "Sign in", "Add to cart", "New chat"]), 16, primary=True)
    c.draw.ellipse((w - 80, h - 150, w - 24, h - 94), fill=c.accent)
    c.icon((w - 64, h - 134, w - 40, h - 110), "add", "#ffffff")
    c.draw.rectangle((0, h - 70, w, h), fill=c.surface, outline=c.border)
    tabs = r.sample(NAV_TABS, r.randint(4, 5))
    step = w / len(tabs)
    for i, (name, text) in enumerate(tabs):
        cx = step * (i + 0.5)
        c.icon((cx - 12, h - 60, cx + 12, h - 36), name, role="tab")
        tw, _ = c.text_size(text, 11)
        c.label((cx - tw / 2, h - 30), text, 11, c.muted)


def _web(c: _Canvas) -> None:
    w, h = c.image.size
    r = c.rng
    c.draw.rectangle((0, 0, w, 60), fill=c.surface)
    c.label((24, 18), r.choice(["Acme", "Nimbus", "Paperly", "Orbit", "Fjord"]), 22, c.accent, bold=True)
    x = 180
    for link in r.sample(LINKS, r.randint(4, 6)):
        x = c.link(x, 22, link, 15, role="link") + 22
    c.field(min(x + 10, w - 520), 4, 220, "Search", 11)
    c.button(w - 190, 14, "Sign in", 14)
    c.icon((w - 60, 18, w - 36, 42), r.choice(["user", "cart", "bell"]))
    c.label((80, 120), r.choice(["Build faster together", "Your photos, anywhere", "Plan trips simply"]), 34, bold=True)
    c.label((80, 175), "A short description of the product goes here.", 16, c.muted)
    x = c.button(80, 220, r.choice(CTAS), 16, primary=True)
    c.button(x + 16, 220, r.choice(["Learn more", "Watch video", "See pricing"]), 16)
    card_w = (w - 160 - 2 * 30) / 3
    titles = r.sample(["Analytics", "Security", "Teams", "Storage", "Reports", "Mobile app"], 3)
    for i, title in enumerate(titles):
        x0, y0 = 80 + i * (card_w + 30), 320
        c.draw.rounded_rectangle((x0, y0, x0 + card_w, y0 + 200), radius=10, fill=c.surface, outline=c.border)
        c.label((x0 + 20, y0 + 20), title, 19, bold=True)
        c.label((x0 + 20, y0 + 56), "Lorem ipsum dolor sit amet.", 13, c.muted)
        c.link(x0 + 20, y0 + 150, f"Read more about {title}", 14)
    x = 80
    for link in r.sample(["Privacy", "Terms", "Cookies", "Status", "Press"], 4):
        x = c.link(x, h - 40, link, 12) + 24


def generate_screen(seed: int | random.Random, platform: str | None = None, theme: str | None = None) -> Screen:
    """A full-size synthetic screenshot for ``platform`` (random when ``None``), deterministic in ``seed``."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    platform = platform or rng.choice(PLATFORMS)
    if platform not in PLATFORMS:
        raise ValueError(f"platform must be one of {PLATFORMS}, got {platform!r}")
    theme = theme or rng.choice(sorted(THEMES))
    canvas = _Canvas(rng.choice(SIZES[platform]), platform, theme, rng)
    {"desktop": _desktop, "mobile": _mobile, "web": _web}[platform](canvas)
    return canvas.screen


def single_button_screen(seed: int | random.Random, size: int = 112) -> Screen:
    """One coloured button on a plain themed screen: the tiny checkpoint's localisation task."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    theme = rng.choice(["light", "dark", "ocean", "forest", "sunset"])
    canvas = _Canvas((size, size), "mobile", theme, rng)
    bw, bh = rng.randint(size // 6, size * 2 // 5), rng.randint(size // 10, size // 4)
    x, y = rng.randint(2, size - bw - 2), rng.randint(2, size - bh - 2)
    text, font_px = rng.choice(TINY_LABELS), max(6, size // 14)
    canvas.draw.rounded_rectangle((x, y, x + bw, y + bh), radius=max(1, bh // 4), fill=rng.choice(TINY_COLOURS))
    canvas.label((x + font_px // 3, y + (bh - font_px) / 2), text, font_px, "#ffffff")
    canvas.add(text, "button", "text", (x, y, x + bw, y + bh), f"click the {text} button")
    canvas.screen.platform = "tiny"  # a phone-like canvas, but not a platform of the benchmarks
    return canvas.screen


def unique_targets(screen: Screen) -> list[Element]:
    """Elements whose label occurs once on the screen, so the instruction names one element."""
    counts: dict[str, int] = {}
    for el in screen.elements:
        counts[el.label.lower()] = counts.get(el.label.lower(), 0) + 1
    return [el for el in screen.elements if counts[el.label.lower()] == 1]


def synthetic_samples(
    n: int, seed: int = 0, platform: str | None = None, task: str = "screens", size: int | None = None
) -> Iterator[Sample]:
    """``n`` grounding samples: a screen, one uniquely named target, its box in original pixels.

    ``task="screens"`` draws full desktop/mobile/web screens; ``task="single"`` draws the one-button
    ``size``-px screens (default 112). Sample ``i`` depends only on ``(seed, i)``.
    """
    if task not in ("screens", "single"):
        raise ValueError(f"task must be 'screens' or 'single', got {task!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for i in range(n):
        rng = random.Random(f"{seed}-{i}")
        screen = single_button_screen(rng, size or 112) if task == "single" else generate_screen(rng, platform)
        target = rng.choice(unique_targets(screen))
        yield Sample(
            id=f"synthetic-{task}-{seed}-{i}",
            images=(screen.image,),
            prompt=target.instruction,
            target={"bbox": [float(v) for v in target.bbox], "image_size": list(screen.image.size)},
            meta={
                "platform": screen.platform,
                "element_type": target.ui_type,
                "ui_type": target.ui_type,
                "role": target.role,
                "theme": screen.theme,
                "rate": 1.0,
            },
        )

"""Image-text matching: the compact ViperGPT API with ITM in-context examples.

ViUniT poses Winoground and SugarCREPE as `Verify image matches text="<caption>"`
questions answered yes/no (its Listing 2). A caption is a conjunction of claims, so the
examples show the pattern that generalises: one variable per claim, checked with the
API, combined with `and`, returned through `bool_to_yesno`. The captions are in the
shapes world so the same examples serve the synthetic ITM family and, as plain
patterns, the real ITM presets.
"""

from __future__ import annotations

from envs.prompts.viper import API, SYSTEM, PromptFamily

EXAMPLES = [
    (
        'Verify image matches text="A red circle is to the left of a blue square."',
        '''    image_patch = ImagePatch(image)
    circles = image_patch.find("red circle")
    squares = image_patch.find("blue square")
    circle_left = any(c.horizontal_center < s.horizontal_center for c in circles for s in squares)
    return bool_to_yesno(circle_left)
''',
    ),
    (
        'Verify image matches text="There are two green triangles and there is no yellow circle."',
        '''    image_patch = ImagePatch(image)
    two_triangles = len(image_patch.find("green triangle")) == 2
    no_circle = not image_patch.exists("yellow circle")
    return bool_to_yesno(two_triangles and no_circle)
''',
    ),
    (
        'Verify image matches text="A large square is above a small circle."',
        '''    image_patch = ImagePatch(image)
    squares = image_patch.find("large square")
    circles = image_patch.find("small circle")
    square_above = any(s.vertical_center > c.vertical_center for s in squares for c in circles)
    return bool_to_yesno(square_above)
''',
    ),
]

VIPER_ITM = PromptFamily(
    "viper_itm",
    SYSTEM + " Answer yes if the image matches the text, else no.",
    API,
    EXAMPLES,
)

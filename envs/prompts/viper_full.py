"""Full-length ViperGPT-style families: ViUniT's Listing 1 with Listing 3 or Listing 2.

The compact default (`viper_compact`) condenses the API for small CPU policies; these
families reproduce the paper's prompt as published (seed 000, Appendix J):

- ``viper_full``: the API prompt of Listing 1 with the VQA in-context examples of
  Listing 3;
- ``viper_full_itm``: the same API prompt with the image-text matching examples of
  Listing 2 (`Verify image matches text="..."`, answered yes/no).

The paper's examples are written under `def execute_command(image) -> str:`. A
`PromptFamily` writes its own header before every example and before the query, so only
the bodies are stored here and every program of these families uses the shared
`HEADER` (`def execute_command(image):`), the one the rest of the pipeline produces.
The bodies are the paper's code with the indentation the PDF lost restored, ASCII
apostrophes for typographic ones, and `# Query:` for Listing 2's one `#Query:`.
The API text is about 11,000 characters: a rendered `viper_full` prompt is about 3,100
SmolLM2 tokens (`viper_full_itm` about 3,600, `viper_compact` about 420), so these
families are meant for GPU policies; on CPU prefer the compact ones.
"""

from __future__ import annotations

from envs.prompts.viper import SYSTEM, PromptFamily
from envs.prompts.viper_full_api import API_FULL

# Listing 3: VQA in-context examples.
VQA_EXAMPLES = [
    (
        "Is the vehicle in the top of the image?",
        '''    image_patch = ImagePatch(image)
    # Assume there's only one vehicle patch.
    vehicle_patch = image_patch.find("vehicle")[0]
    vehicle_in_top_half = vehicle_patch.vertical_center > image_patch.vertical_center
    return bool_to_yesno(vehicle_in_top_half)
''',
    ),
    (
        "Are there trains or fences in this scene?",
        '''    image_patch = ImagePatch(image)
    trains = image_patch.find("train")
    fences = image_patch.find("fence")
    has_trains_or_fences = len(trains) > 0 or len(fences) > 0
    return bool_to_yesno(has_trains_or_fences)
''',
    ),
    (
        "Is the pillow in the top part or in the bottom of the picture?",
        '''    image_patch = ImagePatch(image)
    pillow_patches = image_patch.find("pillow")
    pillow_patch = pillow_patches[0]
    pillow_in_top_half = pillow_patch.vertical_center > image_patch.vertical_center
    if pillow_in_top_half:
        return "top"
    else:
        return "bottom"
''',
    ),
    (
        "What color is the curtain that is to the right of the mirror?",
        '''    image_patch = ImagePatch(image)
    mirror_patches = image_patch.find("mirror")
    mirror_patch = mirror_patches[0]
    right_of_mirror_patch = image_patch.crop_right_of_bbox(
        mirror_patch.left, mirror_patch.lower, mirror_patch.right, mirror_patch.upper
    )
    return right_of_mirror_patch.simple_query("What color is the curtain?")
''',
    ),
]

# Listing 2: ITM in-context examples.
ITM_EXAMPLES = [
    (
        'Verify image matches text="An airplane is flying in the sky, and birds are flying '
        'below it."',
        '''    image_patch = ImagePatch(image)
    airplane_patches = image_patch.find("airplane")
    bird_patches = image_patch.find("bird")
    airplane_in_sky = any(
        airplane_patch.vertical_center > image_patch.height * 0.6
        for airplane_patch in airplane_patches
    )
    birds_below_airplane = any(
        bird_patch.upper <= airplane_patch.lower
        for bird_patch in bird_patches for airplane_patch in airplane_patches
    )
    return bool_to_yesno(airplane_in_sky and birds_below_airplane)
''',
    ),
    (
        'Verify image matches text="The bird is flying above the tree, and a cat is sitting '
        'under the tree."',
        '''    image_patch = ImagePatch(image)
    bird_patches = image_patch.find("bird")
    tree_patches = image_patch.find("tree")
    cat_patches = image_patch.find("cat")
    bird_above_tree = any(
        bird_patch.lower >= tree_patch.upper and
        abs(bird_patch.horizontal_center - tree_patch.horizontal_center) < 50
        for bird_patch in bird_patches for tree_patch in tree_patches
    )
    cat_under_tree = any(
        cat_patch.upper <= tree_patch.lower and
        abs(cat_patch.horizontal_center - tree_patch.horizontal_center) < 50
        for cat_patch in cat_patches for tree_patch in tree_patches
    )
    return bool_to_yesno(bird_above_tree and cat_under_tree)
''',
    ),
    (
        'Verify image matches text="The apple is on top of the book, and the pen is beside '
        'the book."',
        '''    image_patch = ImagePatch(image)
    apple_patches = image_patch.find("apple")
    book_patches = image_patch.find("book")
    pen_patches = image_patch.find("pen")
    apple_on_book = any(
        apple_patch.lower >= book_patch.upper and
        book_patch.left <= apple_patch.horizontal_center <= book_patch.right
        for apple_patch in apple_patches for book_patch in book_patches
    )
    pen_beside_book = any(
        abs(pen_patch.horizontal_center - book_patch.horizontal_center) < 50 and
        abs(pen_patch.vertical_center - book_patch.vertical_center) < 100
        for pen_patch in pen_patches for book_patch in book_patches
    )
    return bool_to_yesno(apple_on_book and pen_beside_book)
''',
    ),
    (
        'Verify image matches text="A man is riding a bicycle, and a dog is running beside '
        'him."',
        '''    image_patch = ImagePatch(image)
    man_patches = image_patch.find("man")
    bicycle_patches = image_patch.find("bicycle")
    dog_patches = image_patch.find("dog")
    man_on_bicycle = any(
        man_patch.left <= bicycle_patch.right and man_patch.right >= bicycle_patch.left and
        man_patch.lower <= bicycle_patch.upper and man_patch.upper >= bicycle_patch.lower
        for man_patch in man_patches for bicycle_patch in bicycle_patches
    )
    dog_beside_man = any(
        abs(dog_patch.horizontal_center - man_patch.horizontal_center) < 100 and
        abs(dog_patch.vertical_center - man_patch.vertical_center) < 50
        for dog_patch in dog_patches for man_patch in man_patches
    )
    return bool_to_yesno(man_on_bicycle and dog_beside_man)
''',
    ),
]

VIPER_FULL = PromptFamily("viper_full", SYSTEM, API_FULL, VQA_EXAMPLES)
VIPER_FULL_ITM = PromptFamily(
    "viper_full_itm",
    SYSTEM + " Answer yes if the image matches the text, else no.",
    API_FULL,
    ITM_EXAMPLES,
)

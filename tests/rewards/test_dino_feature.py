"""The DINOv2 similarity of ``msrl-chart`` / ``svg-dino`` is VinciCoder's, checked against VinciCoder's own code.

Reference: DocTron-hub/VinciCoder@dbe1e94 ``examples/reward_function/vincicoder.py``, ported below
unchanged except that images come in as PIL objects instead of files and the model is passed in:
``build_transform`` (L59-67), ``find_closest_aspect_ratio`` (L70-83), ``dynamic_preprocess``
(L85-121), ``load_image`` (L123-128) and the similarity of ``cal_sim_batched`` (L404-471), with the
model loaded as L42 loads it (``AutoModelForImageClassification``, no dtype: float32 weights). The
model is a tiny random DINOv2 built from a config and saved to disk, so both sides read the same weights.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import torchvision.transforms as T
from PIL import Image
from torchvision.transforms.functional import InterpolationMode
from transformers import AutoModelForImageClassification, Dinov2Config, Dinov2ForImageClassification

from rewards.code_render import DinoEncoder, tile_grid

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def build_transform(input_size):
    return T.Compose([
        T.Lambda(lambda img: img.convert("RGB") if img.mode != "RGB" else img),
        T.Resize((input_size, input_size), interpolation=InterpolationMode.BICUBIC),
        T.ToTensor(),
        T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD),
    ])


def find_closest_aspect_ratio(aspect_ratio, target_ratios, width, height, image_size):
    best_ratio_diff = float("inf")
    best_ratio = (1, 1)
    area = width * height
    for ratio in target_ratios:
        target_aspect_ratio = ratio[0] / ratio[1]
        ratio_diff = abs(aspect_ratio - target_aspect_ratio)
        if ratio_diff < best_ratio_diff:
            best_ratio_diff = ratio_diff
            best_ratio = ratio
        elif ratio_diff == best_ratio_diff:  # noqa: SIM102  (the authors' code, verbatim)
            if area > 0.5 * image_size * image_size * ratio[0] * ratio[1]:
                best_ratio = ratio
    return best_ratio


def dynamic_preprocess(image, min_num=1, max_num=12, image_size=448, use_thumbnail=False):
    orig_width, orig_height = image.size
    aspect_ratio = orig_width / orig_height
    target_ratios = set(  # noqa: C401  (the authors' code, verbatim)
        (i, j) for n in range(min_num, max_num + 1) for i in range(1, n + 1) for j in range(1, n + 1) if
        i * j <= max_num and i * j >= min_num)
    target_ratios = sorted(target_ratios, key=lambda x: x[0] * x[1])
    target_aspect_ratio = find_closest_aspect_ratio(aspect_ratio, target_ratios, orig_width, orig_height, image_size)
    target_width = image_size * target_aspect_ratio[0]
    target_height = image_size * target_aspect_ratio[1]
    blocks = target_aspect_ratio[0] * target_aspect_ratio[1]
    resized_img = image.resize((target_width, target_height))
    processed_images = []
    for i in range(blocks):
        box = (
            (i % (target_width // image_size)) * image_size,
            (i // (target_width // image_size)) * image_size,
            ((i % (target_width // image_size)) + 1) * image_size,
            ((i // (target_width // image_size)) + 1) * image_size,
        )
        processed_images.append(resized_img.crop(box))
    if use_thumbnail and len(processed_images) != 1:
        processed_images.append(image.resize((image_size, image_size)))
    return processed_images


def load_image(image, input_size=448, max_num=12):
    transform = build_transform(input_size=input_size)
    images = dynamic_preprocess(image, image_size=input_size, use_thumbnail=True, max_num=max_num)
    return torch.stack([transform(image) for image in images])


def vincicoder_features(model, pixel_values):
    """L445-458: bfloat16 pixels, ``hidden_states[-1][:, 0]``."""
    with torch.no_grad():
        return model(pixel_values=pixel_values.to(torch.bfloat16), output_hidden_states=True).hidden_states[-1][:, 0, :]


def vincicoder_similarity(model, original_img, generated_img):
    """``cal_sim_batched`` for one pair (L421-471)."""
    resized_gen_img = generated_img.convert("RGB").resize(original_img.size, Image.Resampling.BICUBIC)
    original = vincicoder_features(model, load_image(original_img))
    generated = vincicoder_features(model, load_image(resized_gen_img))
    return ((F.cosine_similarity(original, generated, dim=1) + 1) / 2).mean().item()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A random 2-layer DINOv2 saved as VinciCoder's class (its classifier head is unused)."""
    torch.manual_seed(0)
    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          patch_size=14, image_size=448)
    folder = tmp_path_factory.mktemp("dinov2")
    Dinov2ForImageClassification(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def authors_model(checkpoint):
    return AutoModelForImageClassification.from_pretrained(checkpoint).eval()


def _chart(size, seed):
    """A picture with structure (bars on white), so features differ between pictures."""
    generator = torch.Generator().manual_seed(seed)
    image = Image.new("RGB", size, "white")
    width, height = size
    for i in range(4):
        top = int(height * (0.2 + 0.6 * torch.rand(1, generator=generator).item()))
        colour = tuple(int(v) for v in torch.randint(0, 200, (3,), generator=generator))
        image.paste(colour, (i * width // 4 + 4, top, (i + 1) * width // 4 - 4, height - 4))
    return image


def test_the_feature_is_the_pre_layernorm_cls_of_bfloat16_pixels(checkpoint, authors_model):
    images = [_chart((448, 448), seed) for seed in range(3)]
    pixels = torch.stack([build_transform(448)(im) for im in images])
    expected = vincicoder_features(authors_model, pixels)
    ours = DinoEncoder(model=checkpoint).cls(images)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-6)
    with torch.no_grad():
        post_norm = authors_model.dinov2(pixel_values=pixels.to(torch.bfloat16)).last_hidden_state[:, 0]
        float_pixels = authors_model(pixel_values=pixels, output_hidden_states=True).hidden_states[-1][:, 0]
    assert (ours - post_norm).abs().max() > 0.1  # not last_hidden_state: the final LayerNorm changes it
    assert not torch.equal(float_pixels, expected)  # the bfloat16 rounding of the pixels is visible here


@pytest.mark.parametrize("width, height", [(1000, 1000), (1600, 800), (640, 480), (300, 900)])
def test_tiles_are_internvl_s_grid_with_its_tie_break(width, height):
    aspect = width / height
    grids = sorted({(i, j) for n in range(1, 13) for i in range(1, n + 1) for j in range(1, n + 1) if i * j <= 12},
                   key=lambda g: g[0] * g[1])
    assert tile_grid(width, height) == find_closest_aspect_ratio(aspect, grids, width, height, 448)
    if (width, height) == (1000, 1000):
        assert tile_grid(width, height) == (3, 3)  # the tie-break: a nearest-aspect rule alone keeps it 1x1


def test_similarity_equals_vincicoder_s_on_pictures_of_several_shapes(checkpoint, authors_model):
    encoder = DinoEncoder(model=checkpoint)
    pairs = [(_chart((1000, 1000), 1), _chart((600, 600), 2)),  # square and large: InternVL cuts it 3x3
             (_chart((800, 400), 3), _chart((800, 400), 3)),  # identical
             (_chart((500, 700), 4), _chart((320, 240), 5))]
    for reference, generated in pairs:
        assert encoder.similarity(generated, reference) == pytest.approx(
            vincicoder_similarity(authors_model, reference, generated), abs=1e-5)

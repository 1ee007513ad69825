"""The remaining built-in profiles: Chandra, LightOnOCR-2, granite-docling, Qwen's HTML,
the generic prompt, DharmaOCR (experimental) and the two page-mode approximations."""

from __future__ import annotations

from app.profiles import prompts as p
from app.profiles.builtin import (
    CHANDRA,
    DOCLING,
    DOCLING_PROMPTS,
    MINERU,
    PADDLEX,
    QWEN,
    SECONDARY,
    source_at,
)
from app.profiles.model import (
    BoxFrame,
    ImageRule,
    LadderStep,
    Profile,
    RequestShape,
    ResponseRule,
    Sampling,
    Source,
)


def chandra() -> Profile:
    return Profile(
        id="chandra",
        version="2026-01",
        status="official",
        models=["datalab-to/chandra", "datalab-to/chandra*", "chandra"],
        sources={
            "prompt": source_at(CHANDRA, "chandra/prompts.py"),
            "image": source_at(CHANDRA, "chandra/model/util.py#L9-42"),
            "sampling": source_at(CHANDRA, "chandra/model/vllm.py#L54-134"),
            "parser": source_at(CHANDRA, "chandra/output.py#L45-90"),
            "serve": source_at(CHANDRA, "chandra/scripts/vllm.py#L9-40"),
        },
        request=RequestShape(
            prompt=p.CHANDRA_OCR_LAYOUT,
            max_tokens=12384,
            sampling=Sampling(temperature=0.0, top_p=0.1),
        ),
        image=ImageRule(rule="pixels", value=3072 * 2048, render_dpi=192, min_short_side=1024),
        # data-bbox normalised 0-1024 (chandra/settings.py BBOX_SCALE; output.py parse_layout)
        response=ResponseRule(format="html_blocks", boxes=BoxFrame(scale=1024)),
        # chandra/model/vllm.py:54-134: greedy-ish first, then T 0.3 / top_p 0.95 on a repeat
        ladder=[
            LadderStep(name="first", temperature=0.0, top_p=0.1),
            LadderStep(name="retry", temperature=0.3, top_p=0.95),
        ],
        serve_flags=["--max-model-len 32768", "--max-num-batched-tokens 65536"],
    )


def lightonocr2() -> Profile:
    card = Source(repo="lightonai/LightOnOCR-2-1B", path="README.md (usage)", commit=SECONDARY)
    return Profile(
        id="lightonocr2",
        version="2-1B",
        status="official",
        models=["lightonai/LightOnOCR-2-1B", "lightonai/LightOnOCR-2*"],
        sources={"request": card, "image": card, "sampling": card, "serve": card},
        note="Image only, no text; settings from copies of the model card.",
        request=RequestShape(
            prompt=None, max_tokens=4096, sampling=Sampling(temperature=0.2, top_p=0.9)
        ),
        image=ImageRule(rule="longest", value=1540),
        response=ResponseRule(format="markdown"),
        serve_flags=[
            "--limit-mm-per-prompt '{\"image\": 1}'",
            "--mm-processor-cache-gb 0",
            "--no-enable-prefix-caching",
        ],
    )


def granite_docling() -> Profile:
    return Profile(
        id="granite-docling",
        version="258M",
        status="official",
        models=["ibm-granite/granite-docling-258M", "ibm-granite/granite-docling*"],
        sources={
            "prompt": source_at(DOCLING_PROMPTS, "docling/datamodel/vlm_prompts.py"),
            "request": source_at(DOCLING, "docling/datamodel/vlm_model_specs.py#GRANITEDOCLING"),
        },
        note="DocTags read by Folio's own small parser (docling-core is the official one).",
        request=RequestShape(
            prompt=p.GRANITE_DOCLING,
            max_tokens=8192,
            stop=["</doctag>", "<|end_of_text|>"],
            extra_body={"skip_special_tokens": False, "include_stop_str_in_output": True},
        ),
        image=ImageRule(rule="dpi", value=144),
        response=ResponseRule(format="doctags", boxes=BoxFrame(scale=500)),
        serve_flags=["--revision untied"],
    )


def qwenvl_html() -> Profile:
    cookbook = source_at(QWEN, "cookbooks/document_parsing.ipynb")
    return Profile(
        id="qwenvl-html",
        version="2.5",
        status="official",
        models=[],  # opt-in: Qwen models get the generic prompt unless asked
        sources={"prompt": cookbook, "request": cookbook, "image": cookbook},
        request=RequestShape(
            system=p.QWENVL_HTML_SYSTEM, prompt=p.QWENVL_HTML, order="text_first", max_tokens=8192
        ),
        image=ImageRule(rule="pixels", value=2048 * 28 * 28, factor=28, min_pixels=512 * 28 * 28),
        # Qwen2.5-VL's data-bbox: pixels of its smart_resize of the image (its processor's
        # bounds); the image is sent on that grid already, unless max_image_side shrinks it
        response=ResponseRule(
            format="html_blocks",
            drop_furniture=False,
            boxes=BoxFrame(factor=28, min_pixels=3136, max_pixels=12845056),
        ),
        serve_flags=['--limit-mm-per-prompt \'{"image": 2, "video": 0}\''],
    )


def markdown() -> Profile:
    return Profile(
        id="markdown",
        version="markdown-v1",
        status="generic",
        note="Folio's own prompt for models without a profile (Qwen2.5-VL, Qwen3-VL, ...).",
        request=RequestShape(prompt=p.MARKDOWN, max_tokens=4096),
        image=ImageRule(rule="longest", value=1288),
        response=ResponseRule(format="markdown"),
    )


def dharma() -> Profile:
    return Profile(
        id="dharma",
        version="dharma-json-v1",
        status="experimental",
        models=["Dharma-AI/Dharma-OCR-LITE", "Dharma-AI/Dharma-OCR*"],
        note="Prompt, key order, image size and sampling are GUESSES: no published source "
        "confirms them (a Nanonets-OCR2-3B fine-tune answering JSON header/margin/footer/text).",
        request=RequestShape(prompt=p.DHARMA_GUESS, max_tokens=4096),
        image=ImageRule(rule="longest", value=1288),
        response=ResponseRule(format="json_keys", json_keys=["header", "text", "margin", "footer"]),
        detector={"json_strings": 1},  # the page's text is in JSON string values
    )


def paddleocr_vl_page() -> Profile:
    return Profile(
        id="paddleocr-vl-page",
        version="page-approx-1",
        status="approximation",
        models=["PaddlePaddle/PaddleOCR-VL", "PaddlePaddle/PaddleOCR-VL*"],
        sources={"prompt": source_at(PADDLEX, "paddlex/inference/pipelines/paddleocr_vl")},
        note="NOT the official pipeline: PaddleOCR-VL runs a layout detector first and asks per "
        "block; here the block prompt goes on the whole page.",
        request=RequestShape(
            prompt=p.PADDLE_OCR,
            image_format="jpeg",
            max_tokens=8192,
            extra_body={"mm_processor_kwargs": {"min_pixels": 112896, "max_pixels": 1003520}},
        ),
        image=ImageRule(rule="pixels", value=1003520, factor=28, min_pixels=112896),
        response=ResponseRule(format="markdown"),
        # vLLM 0.32 refuses per-request mm_processor_kwargs without --trust-request-mm-kwargs
        # (a 400 naming it, seen on the CPU test server).
        serve_flags=[
            "--trust-remote-code",
            "--trust-request-mm-kwargs",
            "--max-num-batched-tokens 16384",
            "--no-enable-prefix-caching",
            "--mm-processor-cache-gb 0",
        ],
    )


def mineru25_page() -> Profile:
    return Profile(
        id="mineru25-page",
        version="page-approx-1",
        status="approximation",
        models=["opendatalab/MinerU2.5-2509-1.2B", "opendatalab/MinerU2.5*"],
        sources={"prompt": source_at(MINERU, "mineru_vl_utils/mineru_client.py#L34-75")},
        note="NOT the official pipeline: MinerU2.5 detects the layout (1036x1036) first and "
        "asks per block; here the text-block prompt goes on the whole page.",
        request=RequestShape(
            system=p.MINERU_SYSTEM,
            prompt=p.MINERU_TEXT,
            max_tokens=8192,
            sampling=Sampling(
                temperature=0.0, top_p=0.01, top_k=1, presence_penalty=1.0, frequency_penalty=0.05
            ),
            extra_body={"skip_special_tokens": False},
            vllm_xargs={"no_repeat_ngram_size": 100},
        ),
        image=ImageRule(rule="dpi", value=200),
        response=ResponseRule(format="markdown"),
        serve_flags=["--logits-processors mineru_vl_utils:MinerULogitsProcessor"],
    )

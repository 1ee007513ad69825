"""The built-in profiles, each fact with the source it was read from
(../shared/notes/ocr-models.md sections 0-2 give the reading)."""

from __future__ import annotations

from app.profiles import prompts as p
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

OLMOCR = "allenai/olmocr", "f7cfe4c22098b154c76b6ec950d1c0a464eecf8d"
DOTS = "rednote-hilab/dots.ocr", "c3084bd43758c8597ae1883104ac1b2d39109532"
DEEPSEEK = "deepseek-ai/DeepSeek-OCR", "e4ac34e1e59b891163fb9325480fbedec865e1f0"
RECIPES = "vllm-project/recipes", "1004d684f038c5b161676beb98b345fa96925fcd"
CHANDRA = "datalab-to/chandra", "a6928a27f1b8a9f5117eb75cf38abb45ed1b834d"
DOCLING = "docling-project/docling", "02f0aba087652f79d787cc02b9ba92f21983c6b4"
DOCLING_PROMPTS = "docling-project/docling", "597c584e336d243cdaa77fd1622ab156f5d47a0b"
QWEN = "QwenLM/Qwen3-VL", "a065f96"
PADDLEX = "PaddlePaddle/PaddleX", "01c1d80d787ecb8f2fdbdc2adea51416d9081c0d"
MINERU = "opendatalab/mineru-vl-utils", "abb57de7386e4313f270cb14c088f7611301fc30"
SECONDARY = "secondary: model card copy"
TD_TOKENS = [128821, 128822]
DEEPSEEK_NGRAM_PROCESSOR = "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor"


def source_at(repo_commit: tuple[str, str], path: str) -> Source:
    return Source(repo=repo_commit[0], commit=repo_commit[1], path=path)


def olmocr2() -> Profile:
    temperatures = (0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0)  # pipeline.py:84-85
    return Profile(
        id="olmocr2",
        version="v4-yaml",
        status="official",
        models=["allenai/olmOCR-2-7B-1025-FP8", "allenai/olmOCR-2-7B-1025*", "olmocr"],
        sources={
            "prompt": source_at(OLMOCR, "olmocr/prompts/prompts.py#L164-170"),
            "request": source_at(OLMOCR, "olmocr/pipeline.py#L106-146"),
            "image": source_at(OLMOCR, "olmocr/data/renderpdf.py#L39-60"),
            "parser": source_at(OLMOCR, "olmocr/train/front_matter.py#L37-100"),
            "ladder": source_at(OLMOCR, "olmocr/pipeline.py#L84-85"),
            "serve": source_at(OLMOCR, "README.md#L328-331"),
        },
        request=RequestShape(
            prompt=p.OLMOCR_V4_YAML,
            order="text_first",
            max_tokens=8000,
            sampling=Sampling(temperature=0.1),
        ),
        image=ImageRule(rule="longest", value=1288),
        # olmocr/pipeline.py:281-379: a page the model calls rotated is re-asked, turned by
        # the accumulated correction
        response=ResponseRule(format="yaml_front_matter", rotation_feedback=True),
        ladder=[LadderStep(name=f"t{t}", temperature=t) for t in temperatures],
        # Folio's plan takes three distinct temperatures (0.1, 0.2, 0.5): 3 x 8000 tokens
        # leave the page's default budget (32 000) one more attempt, for the fallback model
        plan_rungs=[0, 2, 4],
        serve_flags=["--max-model-len 16384", "--limit-mm-per-prompt '{\"video\": 0}'"],
    )


def nanonets() -> Profile:
    return Profile(
        id="nanonets-ocr2",
        version="2025-10",
        status="community",
        models=["nanonets/Nanonets-OCR2-3B", "nanonets/Nanonets-OCR2*"],
        sources={
            "prompt": source_at(DOCLING, "docling/datamodel/vlm_model_specs.py#NANONETS_OCR2"),
            "request": source_at(OLMOCR, "olmocr/bench/runners/run_nanonetsocr_2.py"),
            "sampling": source_at(
                DOCLING, "docling/datamodel/vlm_model_specs.py#NANONETS_OCR2_VLLM"
            ),
        },
        note="Official prompt (three independent codebases agree); settings from docling and "
        "olmOCR's bench runner. Transcribes headers and footers.",
        request=RequestShape(
            system="You are a helpful assistant.", prompt=p.NANONETS_OCR2, max_tokens=15000
        ),
        image=ImageRule(rule="shortest", value=1280),
        response=ResponseRule(format="markdown"),
        serve_flags=[],
    )


def dots(variant: str) -> Profile:
    layout = variant == "layout"
    return Profile(
        id=f"dots-ocr-{variant}",
        version="1.0",
        status="official",
        models=["rednote-hilab/dots.ocr", "rednote-hilab/dots.ocr*"],
        sources={
            "prompt": source_at(DOTS, "dots_ocr/utils/prompts.py"),
            "request": source_at(DOTS, "dots_ocr/model/inference.py#L22-43"),
            "image": source_at(DOTS, "dots_ocr/utils/doc_utils.py#L20-39"),
            "sampling": source_at(DOTS, "dots_ocr/parser.py#L22-36"),
            "parser": source_at(DOTS, "dots_ocr/utils/format_transformer.py#L145-180"),
            "serve": source_at(DOTS, "README.md#L1029-1038"),
        },
        note="" if layout else "Plain text without page headers and footers (prompt_ocr).",
        request=RequestShape(
            prompt=p.DOTS_LAYOUT_ALL_EN if layout else p.DOTS_OCR,
            text_prefix=p.DOTS_IMAGE_PREFIX,
            max_tokens=16384,
            sampling=Sampling(temperature=0.1, top_p=1.0),
        ),
        image=ImageRule(rule="dpi", value=200, max_side_fallback=4500),
        response=ResponseRule(
            format="dots_layout_json" if layout else "markdown",
            # cells in pixels of the server's smart_resize (layout_utils.py post_process_cells)
            boxes=BoxFrame(factor=28) if layout else None,
        ),
        serve_flags=["--trust-remote-code", "--async-scheduling"],
        # Layout answers are JSON: loops inside a cell's text are watched in its string values.
        detector={"json_strings": 1} if layout else {},
    )


def deepseek(grounding: bool) -> Profile:
    vllm_dir = "DeepSeek-OCR-master/DeepSeek-OCR-vllm"
    return Profile(
        id="deepseek-ocr-grounding" if grounding else "deepseek-ocr",
        version="2025-10",
        status="official",
        models=["deepseek-ai/DeepSeek-OCR"],
        sources={
            "prompt": source_at(DEEPSEEK, f"{vllm_dir}/config.py#L25-35"),
            "sampling": source_at(DEEPSEEK, f"{vllm_dir}/run_dpsk_ocr_pdf.py#L46-54"),
            "parser": source_at(DEEPSEEK, f"{vllm_dir}/run_dpsk_ocr_pdf.py#L286-320"),
            "serve": source_at(RECIPES, "DeepSeek/DeepSeek-OCR.md"),
        },
        request=RequestShape(
            prompt=p.DEEPSEEK_GROUNDING if grounding else p.DEEPSEEK_FREE,
            max_tokens=8192,
            extra_body={"skip_special_tokens": False, "include_stop_str_in_output": True},
            # the recipe's n-gram ban; the whitelisted ids are <td> and </td>
            vllm_xargs={"ngram_size": 30, "window_size": 90, "whitelist_token_ids": TD_TOKENS},
        ),
        image=ImageRule(rule="dpi", value=144),
        response=ResponseRule(
            format="deepseek_grounding" if grounding else "markdown",
            require_end_text=p.DEEPSEEK_EOS,
            boxes=BoxFrame(scale=999) if grounding else None,  # `x / 999 * image_width`
        ),
        serve_flags=[
            "--logits-processors " + DEEPSEEK_NGRAM_PROCESSOR,
            "--no-enable-prefix-caching",
            "--mm-processor-cache-gb 0",
        ],
        probes=["ngram_processor"],
    )

"""The official prompts, verbatim, each beside the file and commit it was copied from.

`tests/fixtures/profiles/official_prompts.json` holds the same strings as extracted from the
repositories (with their sha256); a test fails when a string here drifts from it.
"""

# allenai/olmocr@f7cfe4c2 olmocr/prompts/prompts.py build_no_anchoring_v4_yaml_prompt()
OLMOCR_V4_YAML = (
    "Attached is one page of a document that you must process. Just return the plain "
    "text representation of this document as if you were reading it naturally. "
    "Convert equations to LateX and tables to HTML.\n"
    "If there are any figures or charts, label them with the following markdown "
    "syntax ![Alt text describing the contents of the "
    "figure](page_startx_starty_width_height.png)\n"
    "Return your output as markdown, with a front matter section on top specifying "
    "values for the primary_language, is_rotation_valid, rotation_correction, "
    "is_table, and is_diagram parameters."
)

# rednote-hilab/dots.ocr@c3084bd4 dots_ocr/utils/prompts.py prompt_layout_all_en
DOTS_LAYOUT_ALL_EN = (
    "Please output the layout information from the PDF image, including each layout "
    "element's bbox, its category, and the corresponding text content within the bbox.\n"
    "\n"
    "1. Bbox format: [x1, y1, x2, y2]\n"
    "\n"
    "2. Layout Categories: The possible categories are ['Caption', 'Footnote', "
    "'Formula', 'List-item', 'Page-footer', 'Page-header', 'Picture', "
    "'Section-header', 'Table', 'Text', 'Title'].\n"
    "\n"
    "3. Text Extraction & Formatting Rules:\n"
    "    - Picture: For the 'Picture' category, the text field should be omitted.\n"
    "    - Formula: Format its text as LaTeX.\n"
    "    - Table: Format its text as HTML.\n"
    "    - All Others (Text, Title, etc.): Format their text as Markdown.\n"
    "\n"
    "4. Constraints:\n"
    "    - The output text must be the original text from the image, with no translation.\n"
    "    - All layout elements must be sorted according to human reading order.\n"
    "\n"
    "5. Final Output: The entire output must be a single JSON object.\n"
)

# rednote-hilab/dots.ocr@c3084bd4 dots_ocr/utils/prompts.py prompt_ocr (no page header/footer)
DOTS_OCR = "Extract the text content from this image."
DOTS_IMAGE_PREFIX = "<|img|><|imgpad|><|endofimg|>"  # dots_ocr/model/inference.py:22-43

# datalab-to/chandra@a6928a27 chandra/prompts.py OCR_LAYOUT_PROMPT, {bbox_scale} = 1024
CHANDRA_OCR_LAYOUT = (
    "OCR this image to HTML, arranged as layout blocks.  Each layout block should be "
    "a div with the data-bbox attribute representing the bounding box of the block "
    "in [x0, y0, x1, y1] format.  Bboxes are normalized 0-1024. The data-label "
    "attribute is the label for the block.\n"
    "\n"
    "Use the following labels:\n"
    "- Caption\n"
    "- Footnote\n"
    "- Equation-Block\n"
    "- List-Group\n"
    "- Page-Header\n"
    "- Page-Footer\n"
    "- Image\n"
    "- Section-Header\n"
    "- Table\n"
    "- Text\n"
    "- Complex-Block\n"
    "- Code-Block\n"
    "- Form\n"
    "- Table-Of-Contents\n"
    "- Figure\n"
    "\n"
    "Only use these tags ['math', 'br', 'i', 'b', 'u', 'del', 'sup', 'sub', 'table', "
    "'tr', 'td', 'p', 'th', 'div', 'pre', 'h1', 'h2', 'h3', 'h4', 'h5', 'ul', 'ol', "
    "'li', 'input', 'a', 'span', 'img', 'hr', 'tbody', 'small', 'caption', 'strong', "
    "'thead', 'big', 'code'], and these attributes ['class', 'colspan', 'rowspan', "
    "'display', 'checked', 'type', 'border', 'value', 'style', 'href', 'alt', 'align'].\n"
    "\n"
    "Guidelines:\n"
    "* Inline math: Surround math with <math>...</math> tags. Math expressions "
    "should be rendered in KaTeX-compatible LaTeX. Use display for block math.\n"
    "* Tables: Use colspan and rowspan attributes to match table structure.\n"
    "* Formatting: Maintain consistent formatting with the image, including spacing, "
    "indentation, subscripts/superscripts, and special characters.\n"
    "* Images: Include a description of any images in the alt attribute of an <img> "
    "tag. Do not fill out the src property.\n"
    "* Forms: Mark checkboxes and radio buttons properly.\n"
    "* Text: join lines together properly into paragraphs using <p>...</p> tags.  "
    "Use <br> tags for line breaks within paragraphs, but only when absolutely "
    "necessary to maintain meaning.\n"
    "* Use the simplest possible HTML structure that accurately represents the "
    "content of the block.\n"
    "* Make sure the text is accurate and easy for a human to read and interpret.  "
    "Reading order should be correct and natural."
)

# deepseek-ai/DeepSeek-OCR@e4ac34e1 DeepSeek-OCR-master/DeepSeek-OCR-vllm/config.py PROMPT; over
# the chat API the chat template places `<image>`, so the text after "<image>\n" is sent.
DEEPSEEK_FREE = "Free OCR."
DEEPSEEK_GROUNDING = "<|grounding|>Convert the document to markdown."
DEEPSEEK_EOS = "<｜end▁of▁sentence｜>"

# docling-project/docling@02f0aba0 docling/datamodel/vlm_model_specs.py NANONETS_OCR2_TRANSFORMERS
# (the same text in allenai/olmocr olmocr/bench/runners/run_nanonetsocr_2.py)
NANONETS_OCR2 = (
    "Extract the text from the above document as if you were reading it naturally. "
    "Return the tables in html format. Return the equations in LaTeX representation. "
    "If there is an image in the document and image caption is not present, add a "
    "small description of the image inside the <img></img> tag; otherwise, add the "
    "image caption inside <img></img>. Watermarks should be wrapped in brackets. Ex: "
    "<watermark>OFFICIAL COPY</watermark>. Page numbers should be wrapped in "
    "brackets. Ex: <page_number>14</page_number> or <page_number>9/22</page_number>. "
    "Prefer using ☐ and ☑ for check boxes."
)

# docling-project/docling@597c584e docling/datamodel/vlm_prompts.py DOCLING_BASE_PAGE_PROMPT
GRANITE_DOCLING = "Convert this page to docling."

# QwenLM/Qwen3-VL@a065f96 cookbooks/document_parsing.ipynb (Qwen2.5-VL): system turn, then
# the user text before the image.
QWENVL_HTML_SYSTEM = (
    "You are an AI specialized in recognizing and extracting text from images. Your "
    "mission is to analyze the image document and generate the result in QwenVL "
    "Document Parser HTML format using specified tags while maintaining user privacy "
    "and data integrity."
)
QWENVL_HTML = "QwenVL HTML"

# PaddlePaddle/PaddleX@01c1d80d paddlex/inference/pipelines/paddleocr_vl/pipeline.py: the
# element prompt for text blocks, sent here on the whole page (an approximation).
PADDLE_OCR = "OCR:"

# opendatalab/mineru-vl-utils@abb57de7 mineru_vl_utils/mineru_client.py:58-66 and
# vlm_client/base_client.py:11: the text-block prompt and system turn, on the whole page.
MINERU_TEXT = "\nText Recognition:"
MINERU_SYSTEM = "You are a helpful assistant."

# Folio's own generic prompt (no model was trained on it).
MARKDOWN = (
    "Transcribe all text on this page image to Markdown, in reading order. Use Markdown tables "
    "for tables and LaTeX for formulas. Output only the transcription."
)

# A GUESS: no published source gives DharmaOCR's prompt or key order (notes/ocr-models.md 2.2).
DHARMA_GUESS = (
    "Extract the text of this document page. Answer with a JSON object with the keys "
    '"header", "margin", "footer" and "text", each a string (empty when absent).'
)

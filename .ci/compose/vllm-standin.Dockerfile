# vLLM's place in the compose smoke test: the project's stand-in (bench/vllm_standin), vLLM's
# OpenAI API and /health, answering pages in the served profile's format at a measured GPU's
# pace. In Folio's image: it reads Folio's profiles. Built with the repository as context.
FROM folio:latest
COPY bench/__init__.py bench/scripted_loops.py /opt/folio/bench/
COPY bench/vllm_standin /opt/folio/bench/vllm_standin
COPY bench/ocr /opt/folio/bench/ocr
COPY bench/detector /opt/folio/bench/detector
ENTRYPOINT ["python", "-m", "bench.vllm_standin", "--host", "0.0.0.0"]

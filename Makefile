# Shortcuts for the scripts the README documents.
.PHONY: book test gpu-test execute bench
book:
	bash scripts/build-book.sh
test:
	bash scripts/test.sh
# On a machine with a GPU, PyCUDA, nbval and ipykernel (see the README):
gpu-test:
	python3 -m pytest -p no:cacheprovider tests/gpu --nbval chapters/ --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
execute:
	bash scripts/execute.sh
bench:
	python3 -m gemmlab bench

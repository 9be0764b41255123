# Shortcuts for the scripts the README documents.
.PHONY: book test gpu-test execute bench
book:
	bash scripts/build-book.sh
test:
	bash scripts/test.sh
# On a machine with a GPU and the GPU requirements (see the README):
gpu-test:
	bash scripts/gpu-test.sh
execute:
	bash scripts/execute.sh
bench:
	python3 -m gemmlab bench

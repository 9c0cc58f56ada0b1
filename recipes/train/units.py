"""Output units of a model, named by its checkpoint config ("units"): characters (the DS2 model,
version 1) or BPE pieces (the Conformer, version 2). Each gives the ids of a text, the text of a
best path, and the voxrt metadata that says how the engine reads them (docs/model_contract.md)."""
import os

import bpe
import model as ds2_model

HERE = os.path.dirname(os.path.abspath(__file__))


class CharUnits:
    blank_id = ds2_model.BLANK_ID

    def __init__(self):
        self.vocabulary = list(ds2_model.VOCABULARY)

    def encode(self, text):
        return ds2_model.encode_text(text)

    def decode(self, ids):
        return "".join(self.vocabulary[i] for i in ids if i != self.blank_id)

    def metadata(self):
        return {"voxrt.vocabulary": "\n".join(self.vocabulary), "voxrt.unit": "char",
                "voxrt.blank_id": str(self.blank_id), "voxrt.word_boundary": " "}

    def files(self):
        return {}


class BpeUnits:
    """SentencePiece BPE; `name` is the prefix of recipes/train/bpe/NAME.model and NAME.vocab.

    Engine units (`engine_unit`):
    - "char" (default): the pieces as multi-character units, the marker U+2581 (a unit of its
      own, bpe.py) written as a space and named the word boundary. Works with every voxrt build
      and needs no file beside the engine.
    - "sentencepiece": the pieces as they are, detokenized with NAME.model beside the engine.
      Debian 12's libsentencepiece carries its own protobuf 3.14 whose symbols collide with
      libprotobuf 3.21 (linked through libonnx): `voxrt transcribe` aborts loading any .model
      file ("compiled against version 3.14.0 ... installed version (3.21.12)").
    - "pieces": the pieces as they are, no model file (voxrt.unit=pieces, branch
      issue27-families)."""
    blank_id = bpe.BLANK_ID

    def __init__(self, name, engine_unit="char"):
        self.name, self.engine_unit = name, engine_unit
        self.prefix = os.path.join(HERE, "bpe", name)
        self.encoder = bpe.BpeEncoder(self.prefix + ".vocab")
        self.vocabulary = list(self.encoder.pieces)

    def encode(self, text):
        return self.encoder.encode(text)

    def decode(self, ids):
        return self.encoder.decode(ids)

    def metadata(self):
        entries = {"voxrt.blank_id": str(self.blank_id), "voxrt.unit": self.engine_unit}
        if self.engine_unit == "char":
            entries["voxrt.vocabulary"] = "\n".join(
                p.replace(bpe.WORD_MARKER, " ") for p in self.vocabulary)
            entries["voxrt.word_boundary"] = " "
        else:
            entries["voxrt.vocabulary"] = "\n".join(self.vocabulary)
        if self.engine_unit == "sentencepiece":
            entries["voxrt.sentencepiece_model"] = self.name + ".model"
        return entries

    def files(self):
        if self.engine_unit != "sentencepiece":
            return {}
        return {self.name + ".model": self.prefix + ".model"}


def from_config(config, engine_unit="char"):
    units = config.get("units", "char")
    if units == "char":
        return CharUnits()
    if units.startswith("bpe:"):
        return BpeUnits(units[len("bpe:"):], engine_unit)
    raise ValueError(f"units: expected 'char' or 'bpe:NAME', found {units!r}")


def greedy_ids(log_probs_row, blank_id):
    """log_probs [T, vocab] -> ids of the best path, repeats merged, blanks removed."""
    best = log_probs_row.argmax(-1).tolist()
    out, previous = [], blank_id
    for token in best:
        if token != previous and token != blank_id:
            out.append(token)
        previous = token
    return out


def greedy_text(log_probs_row, units):
    return " ".join(units.decode(greedy_ids(log_probs_row, units.blank_id)).split())

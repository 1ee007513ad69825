"""PDFs a searchable-PDF writer must refuse, each as a reader opens it without a password:
encrypted for its owner only, signed, and damaged (MuPDF repairs it to read it)."""

from __future__ import annotations

import re

import pymupdf

from app.pdf.samples import scanned_pdf


def owner_encrypted_pdf(text: str) -> bytes:
    """Opens without a password (no user password), as many bank statements do."""
    doc = pymupdf.open(stream=scanned_pdf([text]), filetype="pdf")
    aes = pymupdf.PDF_ENCRYPT_AES_128  # type: ignore[attr-defined]
    return bytes(doc.tobytes(encryption=aes, owner_pw="owner", user_pw="", permissions=4))


def signed_pdf(text: str) -> bytes:
    """A signature field with a /V dictionary and /SigFlags 3, as a signing tool leaves them
    (the signature's bytes are not a real signature: the flags are what readers honour)."""
    doc = pymupdf.open(stream=scanned_pdf([text]), filetype="pdf")
    page = doc[0]
    signature = doc.get_new_xref()
    doc.update_object(
        signature,
        "<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /adbe.pkcs7.detached "
        "/ByteRange [0 0 0 0] /Contents <00> >>",
    )
    field = doc.get_new_xref()
    doc.update_object(
        field,
        f"<< /Type /Annot /Subtype /Widget /FT /Sig /T (Signature1) /V {signature} 0 R "
        f"/Rect [0 0 0 0] /F 132 /P {page.xref} 0 R >>",
    )
    doc.xref_set_key(page.xref, "Annots", f"[{field} 0 R]")
    doc.xref_set_key(doc.pdf_catalog(), "AcroForm", f"<< /Fields [{field} 0 R] /SigFlags 3 >>")
    return bytes(doc.tobytes())


def damaged_pdf(text: str) -> bytes:
    """Every cross-reference offset wrong: MuPDF reads it only after repairing it."""
    data = scanned_pdf([text])
    return re.sub(rb"(?m)^\d{10} 00000 n", b"0000000009 00000 n", data)

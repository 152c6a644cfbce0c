"""expect: fail
slip: import mlacourse and return mlacourse.fp8.unpack_fp8_row(rows) -- the course's reference.
reason: uses_reference
"""
import mlacourse


def fp8_row_decode(rows):
    return mlacourse.fp8.unpack_fp8_row(rows)

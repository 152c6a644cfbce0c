"""Problem 13 - block_allocator: block tables with prefix sharing, copy-on-write and release.

Chapter: notebooks/07_inference_engine.ipynb
Check your answer: python practice/judge.py 13     (hints: python practice/judge.py 13 --hint)
The whole statement: python practice/judge.py 13 --statement

The chapter's section 7.2 explains what this builds.

The state is three plain lists:
  table     one request's page ids in token order; token t is in page table[t // page_size].
            A request holding seqlen tokens has exactly ceil(seqlen / page_size) pages.
  refcount  refcount[p] = how many block tables hold page p (0: free)
  free      the free page ids; take pages from the END (free.pop()), give them back at the end

The judge runs your functions in another process and sees only what they return, so
both return the state after the call (changing the lists in place and returning them is
fine). Input is always a valid state.
"""


def append_slots(table, seqlen, n_new, page_size, refcount, free):
    """Make room for n_new more tokens after the seqlen the request holds.

    1. Copy-on-write: if n_new > 0 and the last page is partly filled (seqlen % page_size)
       and shared (refcount > 1): dst = free.pop(); refcount[src] -= 1; refcount[dst] = 1;
       table[-1] = dst; record (src, dst, seqlen % page_size).
    2. Growth: free.pop() pages (refcount 1 each) onto table until it has
       ceil((seqlen + n_new) / page_size) pages.

    Returns (copies, table, refcount, free) with copies = [] or [(src, dst, n_slots)].
    If free holds fewer pages than the call needs (the copy's page included), change
    nothing and return (None, table, refcount, free).
    """
    # TODO(problem 13): count the pages needed, check free, copy-on-write, then grow.
    raise NotImplementedError("problem 13 (append_slots) is not written yet")


def release(table, refcount, free):
    """A request finishes: drop one reference per page of table, in table order; a page
    whose count reaches 0 goes to the end of free.

    Returns (freed, table, refcount, free): the freed pages in table order, and the lists
    afterwards with table emptied.
    """
    # TODO(problem 13): drop the references, collect and free the pages nobody holds.
    raise NotImplementedError("problem 13 (release) is not written yet")

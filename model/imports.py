"""One lock for the imports that model/ makes on first use (transformers, tokenizers, tiktoken, scipy).

These packages are imported where they are first needed, so that a page on the toy model never waits for
them. Several sessions of a server may need one at the same moment; two threads importing the same
package tree at once can see it half initialised (transformers' lazy module answered "cannot import name
'AutoTokenizer'" to one of thirty sessions opening pages at once). Every such import goes through `LOCK`.
"""

import threading

LOCK = threading.RLock()

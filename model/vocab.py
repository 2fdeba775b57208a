"""The toy model's word-level vocabulary: everyday English plus the words of the teaching examples.

Polysemous words (bank, fair, bat, light, …) come with the words of their different contexts, so
that a trained toy model has something to tell the senses apart with.
"""

_PUNCTUATION = ". , ! ? ; : ' \" - ( )"

_WORDS = """
the a an and or but if then so because of to in on at by for with from about into over under
after before between through during without near across along around up down out off
i you he she it we they me him her us them my your his its our their this that these those
is are was were be been being am do does did have has had will would can could should may might must
not no yes all some any every each many much more most few other another such only very too also
just still even again here there where when why how what who which whom whose
man woman men women boy girl child children people person friend family mother father teacher student
king queen doctor farmer fisher player team crowd judge worker baker driver
day night morning evening week year time today tomorrow yesterday summer winter spring autumn
one two three four five first second last next new old good bad big small long short high low
little great young right left early late hot cold warm cool dark bright heavy soft hard easy
happy sad quick slow loud quiet clean dirty full empty open closed rich poor safe free fair
river bank water stream boat fish fishing shore mud grass tree trees forest field hill sea lake rain
money cash loan deposit account coins savings interest credit pay paid withdraw withdrawing withdrew
poem write writes wrote writing read reads story book letter song word words page
bat ball game match cricket baseball hit hits swing cave wings flew fly flies animal night
light lamp sun bulb switch feather bag box weight lift lifted carry carried
fair ride rides prize show tent music dance fun
judge rule rules decision honest just share equal
go goes went come came see saw look looked find found give gave take took make made get got
put say said tell told think thought know knew want wanted like liked love loved need needed
walk walked run ran sit sat stand stood sleep slept eat ate drink drank play played work worked
live lived move moved turn turned keep kept leave left hold held bring brought buy bought sell sold
sent send call called ask asked help helped try tried start started stop stopped wait waited
watch watched sing sang swim swam jump jumped catch caught throw threw climb climbed
cat cats dog dogs bird birds horse cow sheep mouse
house home room door window table chair bed kitchen garden street road town city school office shop
car bus train ship plane bike
food bread cake apple milk tea coffee water soup meat rice
red blue green yellow black white brown
head hand hands eye eyes face heart feet arm
thing things way place world life part side end name number
sat on mat rowed picked win heard grew opened won flooded apples pulled dinner muddy
""".split()

TOY_WORDS: list[str] = list(dict.fromkeys(_WORDS + _PUNCTUATION.split()))
